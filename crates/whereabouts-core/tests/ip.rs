//! The IP fallback against MMDB files written here, byte by byte, from the public
//! format description (https://maxmind.github.io/MaxMind-DB/), so the tests need
//! no downloaded database and can damage files at will.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use whereabouts_core::ip::{IpError, IpLocation, IpLocator, RecordShape};

const COUNTRIES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ip-countries.csv"
);
const NPM_DB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb"
);

/// A minimal MMDB writer: enough of the format to build every case below.
mod mmdb {
    use std::net::IpAddr;

    pub enum V {
        Str(&'static str),
        F64(f64),
        F32(f32),
        U16(u16),
        U32(u32),
        Bool(bool),
        Map(Vec<(&'static str, V)>),
        Arr(Vec<V>),
        /// A pointer to an offset already written to the data section.
        Ptr(usize),
    }

    pub fn map(entries: Vec<(&'static str, V)>) -> V {
        V::Map(entries)
    }

    fn ctrl(out: &mut Vec<u8>, ty: u8, size: usize) {
        let (low, ext): (u8, Vec<u8>) = if size < 29 {
            (size as u8, vec![])
        } else if size < 285 {
            (29, vec![(size - 29) as u8])
        } else if size < 65_821 {
            (30, ((size - 285) as u16).to_be_bytes().to_vec())
        } else {
            (31, ((size - 65_821) as u32).to_be_bytes()[1..].to_vec())
        };
        if ty <= 7 {
            out.push((ty << 5) | low);
        } else {
            out.push(low);
            out.push(ty - 7);
        }
        out.extend(ext);
    }

    fn uint(out: &mut Vec<u8>, ty: u8, v: u64, width: usize) {
        let bytes = v.to_be_bytes();
        let skip = bytes[8 - width..].iter().take_while(|&&b| b == 0).count();
        let payload = &bytes[8 - width + skip..];
        ctrl(out, ty, payload.len());
        out.extend(payload);
    }

    pub fn encode(v: &V, out: &mut Vec<u8>) {
        match v {
            V::Str(s) => {
                ctrl(out, 2, s.len());
                out.extend(s.as_bytes());
            }
            V::F64(x) => {
                ctrl(out, 3, 8);
                out.extend(x.to_be_bytes());
            }
            V::F32(x) => {
                ctrl(out, 15, 4);
                out.extend(x.to_be_bytes());
            }
            V::U16(x) => uint(out, 5, *x as u64, 2),
            V::U32(x) => uint(out, 6, *x as u64, 4),
            V::Bool(b) => ctrl(out, 14, *b as usize),
            V::Map(entries) => {
                ctrl(out, 7, entries.len());
                for (k, v) in entries {
                    encode(&V::Str(k), out);
                    encode(v, out);
                }
            }
            V::Arr(items) => {
                ctrl(out, 11, items.len());
                for v in items {
                    encode(v, out);
                }
            }
            V::Ptr(off) if *off < 2048 => {
                out.push(0x20 | (*off >> 8) as u8);
                out.push(*off as u8);
            }
            V::Ptr(off) => {
                out.push(0x20 | 0x18);
                out.extend((*off as u32).to_be_bytes());
            }
        }
    }

    #[derive(Clone, Copy)]
    enum Child {
        Empty,
        Node(usize),
        Data(usize),
    }

    pub struct Builder {
        pub ip_version: u16,
        pub record_size: u16,
        pub database_type: &'static str,
        nodes: Vec<[Child; 2]>,
        data: Vec<u8>,
    }

    impl Builder {
        pub fn new(ip_version: u16, record_size: u16, database_type: &'static str) -> Builder {
            Builder {
                ip_version,
                record_size,
                database_type,
                nodes: vec![[Child::Empty; 2]],
                data: Vec::new(),
            }
        }

        /// Writes `v` to the data section; its offset can be shared by pointers.
        pub fn value(&mut self, v: &V) -> usize {
            let off = self.data.len();
            encode(v, &mut self.data);
            off
        }

        pub fn insert(&mut self, net: &str, v: &V) -> usize {
            let off = self.value(v);
            self.insert_at(net, off);
            off
        }

        pub fn insert_at(&mut self, net: &str, off: usize) {
            let (addr, prefix) = net.split_once('/').unwrap();
            let addr: IpAddr = addr.parse().unwrap();
            let prefix: usize = prefix.parse().unwrap();
            let (bits, len, prefix) = match (addr, self.ip_version) {
                (IpAddr::V4(a), 4) => (u32::from(a) as u128, 32, prefix),
                (IpAddr::V4(a), _) => (u32::from(a) as u128, 128, prefix + 96),
                (IpAddr::V6(a), 6) => (u128::from(a), 128, prefix),
                _ => panic!("IPv6 network in an IPv4 tree"),
            };
            let mut node = 0;
            for i in 0..prefix {
                let bit = ((bits >> (len - 1 - i)) & 1) as usize;
                if i + 1 == prefix {
                    self.nodes[node][bit] = Child::Data(off);
                    break;
                }
                node = match self.nodes[node][bit] {
                    Child::Node(n) => n,
                    Child::Empty => {
                        self.nodes.push([Child::Empty; 2]);
                        let n = self.nodes.len() - 1;
                        self.nodes[node][bit] = Child::Node(n);
                        n
                    }
                    Child::Data(_) => panic!("overlapping networks in a fixture"),
                };
            }
        }

        pub fn tree_size(&self) -> usize {
            self.nodes.len() * self.record_size as usize / 4
        }

        pub fn build(&self) -> Vec<u8> {
            let n = self.nodes.len();
            let rec = |c: Child| match c {
                Child::Empty => n,
                Child::Node(i) => i,
                Child::Data(off) => n + 16 + off,
            };
            let mut out = Vec::new();
            for [l, r] in &self.nodes {
                let (l, r) = (rec(*l) as u32, rec(*r) as u32);
                match self.record_size {
                    24 => {
                        out.extend(&l.to_be_bytes()[1..]);
                        out.extend(&r.to_be_bytes()[1..]);
                    }
                    28 => {
                        out.extend(&l.to_be_bytes()[1..]);
                        out.push((((l >> 24) & 0x0f) << 4) as u8 | ((r >> 24) & 0x0f) as u8);
                        out.extend(&r.to_be_bytes()[1..]);
                    }
                    _ => {
                        out.extend(l.to_be_bytes());
                        out.extend(r.to_be_bytes());
                    }
                }
            }
            out.extend([0u8; 16]);
            out.extend(&self.data);
            out.extend(b"\xAB\xCD\xEFMaxMind.com");
            encode(
                &map(vec![
                    ("binary_format_major_version", V::U16(2)),
                    ("binary_format_minor_version", V::U16(0)),
                    ("build_epoch", V::U32(1_700_000_000)),
                    ("database_type", V::Str(self.database_type)),
                    ("description", map(vec![("en", V::Str("test fixture"))])),
                    ("ip_version", V::U16(self.ip_version)),
                    ("languages", V::Arr(vec![V::Str("en")])),
                    ("node_count", V::U32(n as u32)),
                    ("record_size", V::U16(self.record_size)),
                ]),
                &mut out,
            );
            out
        }
    }
}

use mmdb::{map, Builder, V};

fn country_code(c: &'static str) -> V {
    map(vec![("country_code", V::Str(c))])
}

/// Shaped like @ip-location-db/geo-whois-asn-country-mmdb: `{country_code}` in an
/// IPv6 tree holding IPv4 at ::/96.
fn country_db() -> Vec<u8> {
    country_builder().build()
}

fn country_builder() -> Builder {
    let mut b = Builder::new(6, 24, "country ipvAll");
    b.insert("8.8.8.0/24", &country_code("US"));
    b.insert("1.1.1.0/24", &country_code("AU"));
    b.insert("2001:4860::/32", &country_code("US"));
    b.insert("2a00:1450::/32", &country_code("de"));
    b.insert("2a01:e00::/26", &country_code("FR"));
    // Codes the country table lacks cannot become positions.
    b.insert("5.5.5.0/24", &country_code("ZZ"));
    b.insert("6.6.6.0/24", &country_code("EU1"));
    // Present so that a lookup of these would answer: they must never be looked up.
    b.insert("10.0.0.0/8", &country_code("US"));
    b.insert("127.0.0.0/8", &country_code("US"));
    b.insert("192.168.0.0/16", &country_code("US"));
    b.insert("fc00::/7", &country_code("US"));
    b
}

/// Shaped like GeoLite2-City and DB-IP city lite, with shared values behind pointers
/// the way real writers deduplicate them.
fn city_db(record_size: u16) -> Vec<u8> {
    let mut b = Builder::new(6, record_size, "GeoLite2-City");
    let de = b.value(&map(vec![
        ("geoname_id", V::U32(2_921_044)),
        ("iso_code", V::Str("DE")),
        ("names", map(vec![("en", V::Str("Germany"))])),
    ]));
    b.insert(
        "81.0.0.0/16",
        &map(vec![
            (
                "city",
                map(vec![("names", map(vec![("en", V::Str("Berlin"))]))]),
            ),
            ("continent", map(vec![("code", V::Str("EU"))])),
            ("country", V::Ptr(de)),
            (
                "location",
                map(vec![
                    ("accuracy_radius", V::U16(20)),
                    ("latitude", V::F64(52.5244)),
                    ("longitude", V::F64(13.4105)),
                    ("time_zone", V::Str("Europe/Berlin")),
                ]),
            ),
            ("registered_country", V::Ptr(de)),
            (
                "subdivisions",
                V::Arr(vec![map(vec![("iso_code", V::Str("BE"))])]),
            ),
            ("traits", map(vec![("is_anycast", V::Bool(false))])),
        ]),
    );
    // A GeoLite2 network known only to country level: a centroid with a wide radius.
    b.insert(
        "81.1.0.0/16",
        &map(vec![
            ("country", V::Ptr(de)),
            (
                "location",
                map(vec![
                    ("accuracy_radius", V::U16(1000)),
                    ("latitude", V::F64(51.2993)),
                    ("longitude", V::F64(9.491)),
                ]),
            ),
        ]),
    );
    // DB-IP city lite: a location without accuracy_radius.
    b.insert(
        "2a01:cb00::/32",
        &map(vec![
            (
                "city",
                map(vec![("names", map(vec![("en", V::Str("Paris"))]))]),
            ),
            ("country", map(vec![("iso_code", V::Str("FR"))])),
            (
                "location",
                map(vec![
                    ("latitude", V::F64(48.8534)),
                    ("longitude", V::F64(2.3488)),
                ]),
            ),
        ]),
    );
    b.insert(
        "82.0.0.0/24",
        &map(vec![
            (
                "city",
                map(vec![("names", map(vec![("en", V::Str("Monaco"))]))]),
            ),
            ("country", map(vec![("iso_code", V::Str("MC"))])),
            (
                "location",
                map(vec![
                    ("latitude", V::F64(43.7333)),
                    ("longitude", V::F64(7.4167)),
                ]),
            ),
        ]),
    );
    // GeoLite2 omits `country` for some networks; the registered country stands in.
    b.insert(
        "83.0.0.0/24",
        &map(vec![(
            "registered_country",
            map(vec![("iso_code", V::Str("JP"))]),
        )]),
    );
    // Only in the city database, to tell which of several files answered.
    b.insert(
        "8.8.8.0/24",
        &map(vec![
            (
                "city",
                map(vec![("names", map(vec![("en", V::Str("Mountain View"))]))]),
            ),
            ("country", map(vec![("iso_code", V::Str("US"))])),
            (
                "location",
                map(vec![
                    ("accuracy_radius", V::U16(1000)),
                    ("latitude", V::F64(37.751)),
                    ("longitude", V::F64(-97.822)),
                ]),
            ),
        ]),
    );
    b.build()
}

/// Shaped like the @ip-location-db city packages: flat fields, floats, no radius.
fn flat_city_db() -> Vec<u8> {
    let mut b = Builder::new(4, 32, "city ipv4");
    b.insert(
        "126.0.0.0/8",
        &map(vec![
            ("city", V::Str("Tokyo")),
            ("country_code", V::Str("JP")),
            ("latitude", V::F32(35.6895)),
            ("longitude", V::F32(139.6917)),
            ("postcode", V::Str("")),
            ("state1", V::Str("Tokyo")),
            ("timezone", V::Str("Asia/Tokyo")),
        ]),
    );
    b.insert(
        "127.0.0.0/8",
        &map(vec![("city", V::Str("")), ("country_code", V::Str("JP"))]),
    );
    b.build()
}

/// An IPv4-only tree (ip_version 4), as in geo-whois-asn-country-ipv4.mmdb.
fn v4_only_db(record_size: u16) -> Vec<u8> {
    let mut b = Builder::new(4, record_size, "country ipv4");
    b.insert("1.1.1.0/24", &country_code("AU"));
    // 2001:4860:: starts with the bits of 32.1.72.96: an IPv6 lookup that walked
    // this tree as if it were IPv4 would land here.
    b.insert("32.0.0.0/8", &country_code("US"));
    b.build()
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

fn open(paths: &[PathBuf]) -> IpLocator {
    IpLocator::open(paths, Path::new(COUNTRIES)).unwrap()
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

fn country(loc: &Option<IpLocation>) -> Option<&str> {
    loc.as_ref().and_then(|l| l.country.as_deref())
}

#[test]
fn ip_country_record_takes_the_country_table_position() {
    let f = Files::new();
    let ip = open(&[f.write("c.mmdb", &country_db())]);
    assert_eq!(
        ip.locate_str("8.8.8.8"),
        Some(IpLocation {
            lat: 39.8,
            lon: -98.6,
            accuracy_m: 2_500_000.0,
            country: Some("US".into()),
            city_level: false,
        })
    );
    let au = ip.locate_str("1.1.1.1").unwrap();
    assert_eq!((au.lat, au.lon, au.accuracy_m), (-25.3, 134.5, 2_200_000.0));
    let info: Vec<_> = ip.databases().collect();
    assert_eq!(info[0].shape, RecordShape::CountryCode);
    assert_eq!(info[0].database_type, "country ipvAll");
}

#[test]
fn ip_ipv6_and_mapped_addresses() {
    let f = Files::new();
    let ip = open(&[f.write("c.mmdb", &country_db())]);
    assert_eq!(country(&ip.locate_str("2001:4860:4860::8888")), Some("US"));
    // Lowercase codes in a file still come out as ISO alpha-2 uppercase.
    let de = ip.locate_str("2a00:1450:4001::1").unwrap();
    assert_eq!(de.country.as_deref(), Some("DE"));
    assert_eq!(de.accuracy_m, 450_000.0);
    assert_eq!(country(&ip.locate_str("2a01:e34::1")), Some("FR"));
    // IPv4-mapped, NAT64 and 6to4 addresses are looked up as their IPv4 address.
    assert_eq!(country(&ip.locate_str("::ffff:8.8.8.8")), Some("US"));
    assert_eq!(country(&ip.locate_str("::FFFF:1.1.1.1")), Some("AU"));
    assert_eq!(country(&ip.locate_str("64:ff9b::8.8.8.8")), Some("US"));
    assert_eq!(country(&ip.locate_str("2002:0101:0101::1")), Some("AU"));
}

#[test]
fn ip_non_global_addresses_give_none_even_when_the_file_has_them() {
    let f = Files::new();
    let ip = open(&[f.write("c.mmdb", &country_db())]);
    for s in [
        "10.1.2.3",
        "127.0.0.1",
        "192.168.1.1",
        "::ffff:10.0.0.1",
        "::ffff:127.0.0.1",
        "::1",
        "::",
        "0.0.0.0",
        "fd00::1",
        "fe80::1",
        "169.254.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "192.0.2.1",
        "2001:db8::1",
        "100.64.1.1",
    ] {
        assert_eq!(ip.locate_str(s), None, "{s}");
    }
}

#[test]
fn ip_unknown_and_invalid_input_give_none() {
    let f = Files::new();
    let ip = open(&[f.write("c.mmdb", &country_db())]);
    assert_eq!(ip.locate_str("9.9.9.9"), None);
    assert_eq!(ip.locate_str("2a02::1"), None);
    // Known to the file, but not to the country table.
    assert_eq!(ip.locate_str("5.5.5.5"), None);
    assert_eq!(ip.locate_str("6.6.6.6"), None);
    for s in [
        "",
        " ",
        "8.8.8",
        "8.8.8.8.8",
        "256.1.1.1",
        "hello",
        "8.8.8.8:80",
        "[2001:4860::1]",
        "2001:4860::1%eth0",
        "08.8.8.8",
        "\u{0}",
        "８.８.８.８",
    ] {
        assert_eq!(ip.locate_str(s), None, "{s:?}");
    }
    assert_eq!(country(&ip.locate_str(" 8.8.8.8\n")), Some("US"));
    let addr: IpAddr = "8.8.8.8".parse().unwrap();
    assert_eq!(ip.locate(addr), ip.locate_str("8.8.8.8"));
}

#[test]
fn ip_city_records_carry_their_own_position_and_accuracy() {
    for record_size in [24, 28, 32] {
        let f = Files::new();
        let ip = open(&[f.write("city.mmdb", &city_db(record_size))]);
        assert_eq!(
            ip.databases().next().unwrap().shape,
            RecordShape::GeoIp2City
        );

        let berlin = ip.locate_str("81.0.1.2").unwrap();
        assert!(approx(berlin.lat, 52.5244) && approx(berlin.lon, 13.4105));
        assert_eq!(berlin.accuracy_m, 20_000.0);
        assert_eq!(berlin.country.as_deref(), Some("DE"));
        assert!(berlin.city_level);

        // The file's centroid and radius beat the table's, but this is no city.
        let de = ip.locate_str("81.1.200.1").unwrap();
        assert!(approx(de.lat, 51.2993));
        assert_eq!(de.accuracy_m, 1_000_000.0);
        assert!(!de.city_level);

        let paris = ip.locate_str("2a01:cb00:1::1").unwrap();
        assert!(approx(paris.lat, 48.8534));
        assert_eq!(
            paris.accuracy_m,
            whereabouts_core::ip::DEFAULT_CITY_ACCURACY_M
        );
        assert!(paris.city_level);

        // The default radius is never wider than the country.
        let monaco = ip.locate_str("::ffff:82.0.0.9").unwrap();
        assert_eq!(monaco.accuracy_m, 2_000.0);

        let jp = ip.locate_str("83.0.0.1").unwrap();
        assert_eq!((jp.lat, jp.lon, jp.accuracy_m), (36.2, 138.3, 900_000.0));
        assert_eq!(jp.country.as_deref(), Some("JP"));
    }
}

#[test]
fn ip_flat_city_records() {
    let f = Files::new();
    let ip = open(&[f.write("flat.mmdb", &flat_city_db())]);
    assert_eq!(ip.databases().next().unwrap().shape, RecordShape::FlatCity);
    let tokyo = ip.locate_str("126.1.2.3").unwrap();
    assert!(approx(tokyo.lat, 35.6895) && approx(tokyo.lon, 139.6917));
    assert_eq!(tokyo.accuracy_m, 50_000.0);
    assert_eq!(tokyo.country.as_deref(), Some("JP"));
    assert!(tokyo.city_level);
    // An IPv6 address has no place in an IPv4-only file.
    assert_eq!(ip.locate_str("2001:4860::1"), None);
}

#[test]
fn ip_ipv4_only_tree_never_answers_ipv6() {
    for record_size in [24, 28, 32] {
        let f = Files::new();
        let ip = open(&[f.write("v4.mmdb", &v4_only_db(record_size))]);
        assert_eq!(country(&ip.locate_str("1.1.1.1")), Some("AU"));
        assert_eq!(country(&ip.locate_str("::ffff:1.1.1.1")), Some("AU"));
        assert_eq!(country(&ip.locate_str("32.1.72.96")), Some("US"));
        assert_eq!(ip.locate_str("2001:4860:4860::8888"), None);
    }
}

#[test]
fn ip_first_database_that_knows_the_address_wins() {
    let f = Files::new();
    let city = f.write("city.mmdb", &city_db(24));
    let countries = f.write("country.mmdb", &country_db());
    let v4 = f.write("v4.mmdb", &v4_only_db(24));

    let ip = open(&[city.clone(), countries.clone()]);
    assert!(ip.locate_str("8.8.8.8").unwrap().city_level);
    assert_eq!(country(&ip.locate_str("1.1.1.1")), Some("AU"));
    assert_eq!(country(&ip.locate_str("2001:4860::1")), Some("US"));

    let ip = open(&[countries, city.clone()]);
    assert!(!ip.locate_str("8.8.8.8").unwrap().city_level);
    assert!(ip.locate_str("81.0.0.1").unwrap().city_level);

    // An IPv4 file first must not swallow IPv6 lookups meant for the next file.
    let ip = open(&[v4, city]);
    assert_eq!(
        ip.locate_str("2a01:cb00::1").unwrap().country.as_deref(),
        Some("FR")
    );
}

#[test]
fn ip_open_errors_name_the_file() {
    let f = Files::new();
    let good = f.write("good.mmdb", &country_db());
    let missing = f.dir.path().join("nowhere/absent.mmdb");

    let e = IpLocator::open(&[good.clone(), missing.clone()], Path::new(COUNTRIES))
        .err()
        .unwrap();
    assert!(matches!(e, IpError::Io(_)), "{e:?}");
    assert!(
        e.to_string().contains(&missing.display().to_string()),
        "{e}"
    );

    let no_csv = f.dir.path().join("countries-missing.csv");
    let e = IpLocator::open(std::slice::from_ref(&good), &no_csv)
        .err()
        .unwrap();
    assert!(matches!(e, IpError::Io(_)), "{e:?}");
    assert!(e.to_string().contains("countries-missing.csv"), "{e}");

    let bad_csv = f.write("bad.csv", b"alpha2,lat,lon,radius_m,name\nUS,north,1,1,x\n");
    let e = IpLocator::open(&[good], &bad_csv).err().unwrap();
    assert!(matches!(e, IpError::Countries(_)), "{e:?}");
    assert!(
        e.to_string().contains("bad.csv") && e.to_string().contains("line 2"),
        "{e}"
    );

    let e = IpLocator::open(&[], Path::new(COUNTRIES)).err().unwrap();
    assert!(matches!(e, IpError::Mmdb(_)), "{e:?}");
    // The Error trait is there for callers that box errors.
    let _: &dyn std::error::Error = &e;
}

#[test]
fn ip_corrupt_files_are_rejected_at_open() {
    let f = Files::new();
    let good = country_db();
    let mut no_separator = good.clone();
    no_separator[country_builder().tree_size() + 15] = 0xff;

    let mut asn = Builder::new(6, 24, "GeoLite2-ASN");
    asn.insert(
        "8.8.8.0/24",
        &map(vec![
            ("autonomous_system_number", V::U32(15169)),
            ("autonomous_system_organization", V::Str("GOOGLE")),
        ]),
    );
    let empty_db = Builder::new(6, 24, "empty").build();

    let mut huge_nodes = good.clone();
    // A node count far beyond what the file holds.
    let pos = huge_nodes
        .windows(10)
        .rposition(|w| w == b"node_count")
        .unwrap();
    let len = (huge_nodes[pos + 10] & 0x1f) as usize;
    huge_nodes.splice(pos + 10..pos + 11 + len, [0xc4, 0x7f, 0xff, 0xff, 0xff]);

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty"),
        (
            "garbage",
            b"this is not a database at all".repeat(50),
            "metadata",
        ),
        ("truncated", good[..good.len() / 2].to_vec(), "metadata"),
        (
            "marker only",
            b"\xAB\xCD\xEFMaxMind.com".to_vec(),
            "metadata",
        ),
        ("no separator", no_separator, "separator"),
        ("asn", asn.build(), "ASN"),
        ("no records", empty_db, "no records"),
        ("huge node count", huge_nodes, "tree"),
    ];
    for (name, bytes, needle) in cases {
        let p = f.write(&format!("{}.mmdb", name.replace(' ', "-")), &bytes);
        match IpLocator::open(std::slice::from_ref(&p), Path::new(COUNTRIES)) {
            Ok(_) => panic!("{name}: opened"),
            Err(e) => {
                assert!(matches!(e, IpError::Mmdb(_)), "{name}: {e:?}");
                let msg = e.to_string();
                assert!(msg.contains(&p.display().to_string()), "{name}: {msg}");
                assert!(msg.contains(needle), "{name}: {msg}");
            }
        }
    }
}

/// Every truncation and thousands of byte flips of small valid files: open may
/// fail and lookups may say None, but nothing panics or hangs.
#[test]
fn ip_damaged_files_never_panic() {
    let f = Files::new();
    let probes = [
        "8.8.8.8",
        "1.1.1.1",
        "81.0.0.1",
        "81.1.0.1",
        "82.0.0.1",
        "83.0.0.1",
        "126.0.0.1",
        "2001:4860::1",
        "2a01:cb00::1",
        "2a00:1450::1",
        "9.9.9.9",
    ];
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut opened = 0;
    for (i, good) in [country_db(), city_db(28), flat_city_db(), v4_only_db(32)]
        .into_iter()
        .enumerate()
    {
        let mut variants: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        for _ in 0..1500 {
            let mut bad = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bad.len();
                bad[at] = next() as u8;
            }
            variants.push(bad);
        }
        for (j, bytes) in variants.iter().enumerate() {
            let p = f.write(&format!("d{i}-{j}.mmdb"), bytes);
            if let Ok(ip) = IpLocator::open(std::slice::from_ref(&p), Path::new(COUNTRIES)) {
                opened += 1;
                for s in probes {
                    if let Some(l) = ip.locate_str(s) {
                        assert!(l.lat.is_finite() && l.lon.is_finite() && l.accuracy_m > 0.0);
                    }
                }
            }
            std::fs::remove_file(p).unwrap();
        }
    }
    // Most single-byte flips land in a record or a string and still open.
    assert!(opened > 1000, "only {opened} damaged files opened");
}

fn npm_db() -> Option<PathBuf> {
    let p = PathBuf::from(NPM_DB);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {NPM_DB} is absent; it comes with `npm ci` \
             (@ip-location-db/geo-whois-asn-country-mmdb)"
        );
        None
    }
}

#[test]
fn ip_default_npm_database_locates_well_known_addresses() {
    let Some(path) = npm_db() else { return };
    let ip = open(&[path]);
    let info = ip.databases().next().unwrap();
    assert_eq!(info.shape, RecordShape::CountryCode);
    assert_eq!(info.ip_version, 6);
    assert_eq!(country(&ip.locate_str("8.8.8.8")), Some("US"));
    assert_eq!(ip.locate_str("8.8.8.8").unwrap().lat, 39.8);
    assert_eq!(country(&ip.locate_str("2001:4860:4860::8888")), Some("US"));
    assert_eq!(country(&ip.locate_str("::ffff:8.8.8.8")), Some("US"));
    assert_eq!(country(&ip.locate_str("1.1.1.1")), Some("AU"));
    assert_eq!(ip.locate_str("192.168.0.1"), None);
}

/// A table with every two-letter code, so that every record the file has becomes
/// an answer carrying the file's country.
fn all_codes_csv(f: &Files) -> PathBuf {
    let mut csv = String::from("alpha2,lat,lon,radius_m,name\n");
    for a in b'A'..=b'Z' {
        for b in b'A'..=b'Z' {
            csv.push_str(&format!("{}{},0,0,1,x\n", a as char, b as char));
        }
    }
    f.write("all.csv", csv.as_bytes())
}

/// Our reader against the maxminddb crate on the real file: the same country for
/// every address.
#[test]
fn ip_default_npm_database_agrees_with_maxminddb_crate() {
    use std::collections::BTreeMap;
    let Some(path) = npm_db() else { return };
    let f = Files::new();
    let all = all_codes_csv(&f);
    let ip = IpLocator::open(std::slice::from_ref(&path), &all).unwrap();
    let reference = maxminddb::Reader::open_readfile(&path).unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (mut checked, mut found) = (0, [0, 0]);
    for i in 0..40_000u32 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let addr: IpAddr = if i % 2 == 0 {
            std::net::Ipv4Addr::from(rng as u32).into()
        } else {
            // RIR /12s where /32 allocations lie close together, so that most
            // samples hit a record.
            let top = [0x2a00u128, 0x2400, 0x2600, 0x2800][(rng >> 60) as usize & 3];
            let top = top | ((rng >> 48) as u128 & 0xf);
            std::net::Ipv6Addr::from((top << 112) | (((rng & 0xffff_ffff_ffff) as u128) << 64))
                .into()
        };
        if whereabouts_core::ip::lookup_address(addr) != Some(addr) {
            continue;
        }
        let theirs = reference
            .lookup::<BTreeMap<String, String>>(addr)
            .unwrap()
            .and_then(|m| m.get("country_code").cloned());
        let ours = ip.locate(addr).and_then(|l| l.country);
        assert_eq!(ours, theirs, "{addr}");
        checked += 1;
        found[addr.is_ipv6() as usize] += ours.is_some() as usize;
    }
    assert!(checked > 30_000, "{checked}");
    assert!(found[0] > 10_000 && found[1] > 1_000, "{found:?}");
}

/// Lookup speed on the default database:
/// `cargo test --release -p whereabouts-core --test ip -- --ignored --nocapture ip_bench`
#[test]
#[ignore]
fn ip_bench_default_npm_database() {
    let Some(path) = npm_db() else { return };
    let f = Files::new();
    let ip = IpLocator::open(std::slice::from_ref(&path), &all_codes_csv(&f)).unwrap();
    let mut rng = 0x853c_49e6_748f_ea9bu64;
    let addrs: Vec<IpAddr> = std::iter::from_fn(|| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        Some(IpAddr::from(std::net::Ipv4Addr::from(rng as u32)))
    })
    .filter(|a| whereabouts_core::ip::lookup_address(*a).is_some())
    .take(100_000)
    .collect();
    let mut rates = Vec::new();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let found = addrs.iter().filter(|a| ip.locate(**a).is_some()).count();
        let secs = t.elapsed().as_secs_f64();
        rates.push(addrs.len() as f64 / secs);
        eprintln!("{found} of {} located in {:.1} ms", addrs.len(), secs * 1e3);
    }
    rates.sort_by(f64::total_cmp);
    eprintln!("median: {:.0} lookups/s", rates[1]);
}
