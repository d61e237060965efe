//! The geocoding files held by `LazyFile`: on the real data files, what the header check at
//! open refuses (a foreign or truncated file) and what only the first use finds (a damaged
//! body), for every format that is opened lazily.

use std::path::{Path, PathBuf};

use whereabouts_core::addresses::{AddressExtra, AddressIndex, AddressSet};
use whereabouts_core::countries::CountryIndex;
use whereabouts_core::lazy_file::{DataFile, LazyFile};
use whereabouts_core::places::PlaceIndex;
use whereabouts_core::search::SearchIndex;
use whereabouts_core::timezone::TimezoneIndex;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// `bytes` written to a file named `name` in `dir`.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn open_error<T: DataFile>(path: &Path) -> String {
    match LazyFile::<T>::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e.to_string(),
    }
}

/// The checks of one format on `file` (a sound one): `corrupt` is how its errors begin.
fn check<T: DataFile>(file: &[u8], name: &str, corrupt: &str) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let sound = LazyFile::<T>::open(&write(dir, name, file)).expect("a sound file opens");
    assert!(!sound.is_loaded(), "{name}: nothing is read at open");

    let foreign = open_error::<T>(&write(dir, &format!("{name}.foreign"), &[7; 4096]));
    assert!(foreign.starts_with(corrupt), "{name}: {foreign}");
    let truncated = open_error::<T>(&write(dir, &format!("{name}.cut"), &file[..file.len() - 8]));
    assert!(truncated.starts_with(corrupt), "{name}: {truncated}");
    let missing = open_error::<T>(&data("no-such-file.bin"));
    assert!(!missing.is_empty());

    // a damaged body passes the header check, and fails the first use, then every later one
    let mut damaged = file.to_vec();
    damaged[file.len() / 2] ^= 0x10;
    let path = write(dir, &format!("{name}.damaged"), &damaged);
    let lazy = LazyFile::<T>::open(&path).expect("the header of a damaged body is sound");
    let first = lazy.get().err().expect("the damage is found").to_owned();
    assert_eq!(
        first,
        format!("{corrupt}checksum mismatch ({})", path.display())
    );
    assert_eq!(lazy.get().err(), Some(first.as_str()));
}

#[test]
fn places() {
    let file = std::fs::read(data("places.bin")).unwrap();
    check::<PlaceIndex>(&file, "places.bin", "places file is corrupt: ");
}

#[test]
fn timezones() {
    let file = std::fs::read(data("timezones.bin")).unwrap();
    check::<TimezoneIndex>(&file, "timezones.bin", "polygon index is corrupt: ");
}

#[test]
fn countries() {
    let file = std::fs::read(data("countries.bin")).unwrap();
    check::<CountryIndex>(&file, "countries.bin", "polygon index is corrupt: ");
    // the magic tells the two polygon files apart at open
    let timezones = open_error::<CountryIndex>(&data("timezones.bin"));
    assert!(timezones.contains("bad magic"), "{timezones}");
}

#[test]
fn search() {
    let file = std::fs::read(data("search.bin")).unwrap();
    check::<SearchIndex>(&file, "search.bin", "search file is corrupt: ");
}

#[test]
fn addresses() {
    let mut set = AddressSet::new();
    let extra = AddressExtra {
        city: Some("Paris"),
        ..AddressExtra::default()
    };
    set.add_address(488_566_000, 23_522_000, "1", "Rue de Rivoli", extra);
    set.add_road(
        "Rue de Rivoli",
        vec![(488_566_000, 23_522_000), (488_570_000, 23_530_000)],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "addresses.bin", b"");
    set.write(&path).unwrap();
    let file = std::fs::read(&path).unwrap();
    check::<AddressIndex>(&file, "addresses.bin", "address file is corrupt: ");
    let lazy = LazyFile::<AddressIndex>::open(&path).unwrap();
    assert_eq!(lazy.get().map(|a| a.stats().addresses), Ok(1));
}
