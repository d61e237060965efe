//! A data file checked cheaply at open and read on first use.
//!
//! The geocoding files (timezones, places, countries, search, addresses) take 60 to 100 ms
//! each to read and validate whole (checksum, every reference). An engine that only
//! locates should not pay for them, nor any engine at open: [`LazyFile::open`] opens the file
//! and checks its header against its length (magic, version, header size, section sizes),
//! so a missing, truncated or foreign file is still refused at open with the error the full
//! read would give; [`LazyFile::get`] reads and validates the rest on the first call, once.
//!
//! The file handle opened at open is the one read on first use: a file replaced at its path
//! meanwhile (a sync writing a new one) does not slip in unchecked. A body that fails
//! validation is an error on the first call and the same error on every later one, never a
//! panic: the read is not retried, since the file it would read is the same.

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A file format [`LazyFile`] can hold: a header cheap to check, and a full read.
pub trait DataFile: Sized {
    /// The format's errors, as its eager `open` reports them.
    type Error: fmt::Display + fmt::Debug;
    /// Bytes of the header [`DataFile::check_header`] is given (fewer for a shorter file).
    const HEADER: usize;
    /// The error for a file that cannot be opened or read.
    fn io_error(path: &Path, e: std::io::Error) -> Self::Error;
    /// Checks `head`, the first `min(len, HEADER)` bytes of a file of `len` bytes, without
    /// the rest: an error for any file whose header or length the full read would refuse.
    fn check_header(head: &[u8], len: usize) -> Result<(), Self::Error>;
    /// Validates and reads the whole file.
    fn from_file_bytes(bytes: Vec<u8>) -> Result<Self, Self::Error>;
}

/// A [`DataFile`] whose header passed at open, read and validated on first use.
pub struct LazyFile<T> {
    path: PathBuf,
    len: usize,
    /// The handle opened at open; the first use takes it.
    file: Mutex<Option<File>>,
    /// The file read, or why it could not be. Behind an `Arc` so that a caller can keep the
    /// data beyond this holder (the binding's reverse function does).
    value: OnceLock<Result<Arc<T>, String>>,
}

impl<T: DataFile> LazyFile<T> {
    /// Opens `path` and checks its header; the format's error when it is missing, cannot be
    /// read, or its header or length is wrong.
    pub fn open(path: &Path) -> Result<LazyFile<T>, T::Error> {
        let io = |e| T::io_error(path, e);
        let mut file = File::open(path).map_err(io)?;
        let len = usize::try_from(file.metadata().map_err(io)?.len()).unwrap_or(usize::MAX);
        let mut head = vec![0; len.min(T::HEADER)];
        file.read_exact(&mut head).map_err(io)?;
        T::check_header(&head, len)?;
        Ok(LazyFile {
            path: path.to_owned(),
            len,
            file: Mutex::new(Some(file)),
            value: OnceLock::new(),
        })
    }

    /// The data, read and validated by the first call (callers racing on it wait for that
    /// one read); the reason, naming the file, when it is not sound.
    pub fn get(&self) -> Result<&Arc<T>, &str> {
        self.value
            .get_or_init(|| self.load())
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether the first use has happened (the data read, or refused).
    pub fn is_loaded(&self) -> bool {
        self.value.get().is_some()
    }

    fn load(&self) -> Result<Arc<T>, String> {
        let taken = self
            .file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let named = |e: &dyn fmt::Display| format!("{e} ({})", self.path.display());
        let mut file = taken.ok_or_else(|| named(&"the file was read before"))?;
        let mut bytes = Vec::with_capacity(self.len);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(|e| named(&T::io_error(&self.path, e)))?;
        // a validator must refuse bad bytes, not panic; if one does, the error is kept as
        // any other rather than unwinding through every later call
        match catch_unwind(AssertUnwindSafe(|| T::from_file_bytes(bytes))) {
            Ok(Ok(value)) => Ok(Arc::new(value)),
            Ok(Err(e)) => Err(named(&e)),
            Err(_) => Err(named(&"internal error reading the file")),
        }
    }
}

impl<T> fmt::Debug for LazyFile<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyFile")
            .field("path", &self.path)
            .field("loaded", &self.value.get().map(|r| r.is_ok()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    /// A format of a 4-byte magic `TEST`, then bytes that must all be `b'x'`.
    struct Test(usize);

    /// The length of every file read whole: tests run in parallel, so each counts its own
    /// files by their lengths.
    static READS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    fn reads(len: usize) -> usize {
        READS.lock().unwrap().iter().filter(|&&l| l == len).count()
    }

    impl DataFile for Test {
        type Error = String;
        const HEADER: usize = 4;
        fn io_error(_: &Path, e: std::io::Error) -> String {
            format!("test: {e}")
        }
        fn check_header(head: &[u8], _len: usize) -> Result<(), String> {
            if head == b"TEST" {
                Ok(())
            } else {
                Err("not a test file".into())
            }
        }
        fn from_file_bytes(bytes: Vec<u8>) -> Result<Test, String> {
            READS.lock().unwrap().push(bytes.len());
            std::thread::sleep(std::time::Duration::from_millis(20));
            match bytes[4..].iter().all(|&b| b == b'x') {
                true => Ok(Test(bytes.len())),
                false => Err("test file is corrupt".into()),
            }
        }
    }

    fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn refuses_a_missing_or_foreign_file_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let missing = LazyFile::<Test>::open(Path::new("/nonexistent/wb-lazy")).unwrap_err();
        assert!(missing.starts_with("test: "), "{missing}");
        let foreign = LazyFile::<Test>::open(&file(&dir, "foreign", b"NOPExxxx")).unwrap_err();
        assert_eq!(foreign, "not a test file");
        let short = LazyFile::<Test>::open(&file(&dir, "short", b"TE")).unwrap_err();
        assert_eq!(short, "not a test file");
    }

    #[test]
    fn reads_once_for_racing_first_uses_and_keeps_a_bad_body_s_error() {
        let dir = tempfile::tempdir().unwrap();
        let good = LazyFile::<Test>::open(&file(&dir, "good", b"TESTxxxxxxxx")).unwrap();
        let bad = LazyFile::<Test>::open(&file(&dir, "bad", b"TESTxxxxyxxxxxxx")).unwrap();
        assert!(!good.is_loaded() && !bad.is_loaded());
        let barrier = Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    assert_eq!(good.get().map(|t| t.0), Ok(12));
                    let e = bad.get().err().unwrap();
                    assert!(e.starts_with("test file is corrupt ("), "{e}");
                    assert!(e.ends_with("bad)"), "{e}");
                });
            }
        });
        // one read each, though eight threads asked at once
        assert_eq!((reads(12), reads(16)), (1, 1));
        assert!(good.is_loaded() && bad.is_loaded());
        assert_eq!(bad.get().err(), bad.get().err());
        assert_eq!((reads(12), reads(16)), (1, 1));
    }

    #[test]
    fn reads_the_file_it_opened_when_the_path_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(&dir, "replaced", b"TESTxxxx");
        let lazy = LazyFile::<Test>::open(&path).unwrap();
        let other = path.with_extension("new");
        std::fs::write(&other, b"TESTyyyyyyyyyyyyyyyy").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(lazy.get().map(|t| t.0), Ok(8));
    }
}
