//! A small `.osm.pbf` writer for tests: DenseNodes and Ways in one zlib-compressed
//! PrimitiveBlock after an OSMHeader blob, protobuf encoded by hand. Test fixtures are made
//! with it, so that the tests need no downloaded extract and no external tool.

use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::Compression;

/// A node: id, lat, lon (degrees), tags.
pub type Node<'a> = (i64, f64, f64, &'a [(&'a str, &'a str)]);
/// A way: id, node ids, tags.
pub type Way<'a> = (i64, &'a [i64], &'a [(&'a str, &'a str)]);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    varint(out, (field as u64) << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn int_field(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, (field as u64) << 3);
    varint(out, v);
}

fn packed(out: &mut Vec<u8>, field: u32, values: impl IntoIterator<Item = u64>) {
    let mut body = Vec::new();
    for v in values {
        varint(&mut body, v);
    }
    bytes_field(out, field, &body);
}

fn delta_zigzag(values: impl IntoIterator<Item = i64>) -> Vec<u64> {
    let mut last = 0;
    values
        .into_iter()
        .map(|v| {
            let d = zigzag(v - last);
            last = v;
            d
        })
        .collect()
}

fn blob(out: &mut Vec<u8>, kind: &str, payload: &[u8]) {
    let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
    z.write_all(payload).expect("in memory");
    let zdata = z.finish().expect("in memory");
    let mut body = Vec::new();
    int_field(&mut body, 2, payload.len() as u64);
    bytes_field(&mut body, 3, &zdata);
    let mut header = Vec::new();
    bytes_field(&mut header, 1, kind.as_bytes());
    int_field(&mut header, 3, body.len() as u64);
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&body);
}

/// The bytes of a `.osm.pbf` file holding `nodes` and then `ways`.
pub fn write(nodes: &[Node], ways: &[Way]) -> Vec<u8> {
    let mut strings: Vec<String> = vec![String::new()];
    let mut sid = |s: &str| -> u64 {
        match strings.iter().position(|x| x == s) {
            Some(i) => i as u64,
            None => {
                strings.push(s.to_string());
                (strings.len() - 1) as u64
            }
        }
    };
    let mut dense = Vec::new();
    packed(&mut dense, 1, delta_zigzag(nodes.iter().map(|n| n.0)));
    let e7 = |d: f64| (d * 1e7).round() as i64;
    packed(&mut dense, 8, delta_zigzag(nodes.iter().map(|n| e7(n.1))));
    packed(&mut dense, 9, delta_zigzag(nodes.iter().map(|n| e7(n.2))));
    let mut kv = Vec::new();
    for n in nodes {
        for (k, v) in n.3 {
            kv.push(sid(k));
            kv.push(sid(v));
        }
        kv.push(0);
    }
    packed(&mut dense, 10, kv);
    let mut group = Vec::new();
    bytes_field(&mut group, 2, &dense);
    for (id, refs, tags) in ways {
        let mut w = Vec::new();
        int_field(&mut w, 1, *id as u64);
        packed(&mut w, 2, tags.iter().map(|t| sid(t.0)).collect::<Vec<_>>());
        packed(&mut w, 3, tags.iter().map(|t| sid(t.1)).collect::<Vec<_>>());
        packed(&mut w, 8, delta_zigzag(refs.iter().copied()));
        bytes_field(&mut group, 3, &w);
    }
    let mut table = Vec::new();
    for s in &strings {
        bytes_field(&mut table, 1, s.as_bytes());
    }
    let mut block = Vec::new();
    bytes_field(&mut block, 1, &table);
    bytes_field(&mut block, 2, &group);

    let mut header = Vec::new();
    bytes_field(&mut header, 4, b"OsmSchema-V0.6");
    bytes_field(&mut header, 4, b"DenseNodes");
    let mut out = Vec::new();
    blob(&mut out, "OSMHeader", &header);
    blob(&mut out, "OSMData", &block);
    out
}
