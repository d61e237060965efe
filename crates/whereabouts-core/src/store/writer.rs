//! Streams one shard file front to back in constant memory: the header goes out
//! with placeholder offsets, each vector is appended as it is produced, and the
//! offsets and lengths are patched in at the end.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use super::layout::{self, VectorField, MAX_SHARD_BYTES};

/// Plain-old-data records that may be written and read as raw little-endian bytes.
///
/// # Safety
/// Implementors are `#[repr(C)]`, have no padding the compiler may leave
/// uninitialised (every pad is an explicit field), and any bit pattern is valid.
pub unsafe trait Record: Copy + 'static {}

unsafe impl Record for super::record::StationRecord {}
// The in-memory station is also formats 5 and 6's record, read by `store::legacy`.
unsafe impl Record for super::record::Station {}
unsafe impl Record for super::record::Network {}
unsafe impl Record for super::record::Area {}
unsafe impl Record for super::record::Mast {}
unsafe impl Record for u64 {}
unsafe impl Record for u32 {}

pub fn record_bytes<T: Record>(r: &T) -> &[u8] {
    // SAFETY: Record guarantees a fully initialised repr(C) value.
    unsafe { std::slice::from_raw_parts(r as *const T as *const u8, std::mem::size_of::<T>()) }
}

pub struct ShardWriter {
    out: BufWriter<File>,
    pos: usize,
    created: u64,
    open: Option<(VectorField, usize, u32)>,
    done: Vec<(VectorField, usize, u32)>,
}

impl ShardWriter {
    pub fn create(path: &Path, created: u64) -> io::Result<ShardWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(&layout::header_bytes(created, &[]))?;
        Ok(ShardWriter {
            out,
            pos: layout::HEADER_END,
            created,
            open: None,
            done: Vec::new(),
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == layout::HEADER_END
    }

    /// Starts the next vector; vectors must come in `VectorField::ALL` order.
    pub fn begin(&mut self, field: VectorField) -> io::Result<()> {
        self.end()?;
        let expected = VectorField::ALL[self.done.len()];
        assert_eq!(
            field, expected,
            "shard vectors are written in a fixed order"
        );
        let pad = layout::padding_before_vector(self.pos);
        self.out.write_all(&[0u8; 8][..pad])?;
        self.pos += pad;
        let len_pos = self.pos;
        self.out.write_all(&0u32.to_le_bytes())?;
        self.pos += 4;
        self.open = Some((field, len_pos, 0));
        Ok(())
    }

    pub fn push<T: Record>(&mut self, record: &T) -> io::Result<()> {
        let (field, _, count) = self.open.as_mut().expect("push outside a vector");
        debug_assert_eq!(field.element_size(), std::mem::size_of::<T>());
        *count += 1;
        self.out.write_all(record_bytes(record))?;
        self.pos += std::mem::size_of::<T>();
        if self.pos as u64 > MAX_SHARD_BYTES {
            return Err(io::Error::other("station shard would pass 2 GiB"));
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        if let Some(v) = self.open.take() {
            self.done.push(v);
        }
        Ok(())
    }

    /// Writes the missing vectors as empty ones, patches the header and syncs to disk.
    pub fn finish(mut self) -> io::Result<usize> {
        while self.done.len() + usize::from(self.open.is_some()) < VectorField::ALL.len() {
            let next = VectorField::ALL[self.done.len() + usize::from(self.open.is_some())];
            self.begin(next)?;
        }
        self.end()?;
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        let positions: Vec<(VectorField, usize)> =
            self.done.iter().map(|&(f, p, _)| (f, p)).collect();
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&layout::header_bytes(self.created, &positions))?;
        for &(_, len_pos, count) in &self.done {
            file.seek(SeekFrom::Start(len_pos as u64))?;
            file.write_all(&count.to_le_bytes())?;
        }
        file.sync_all()?;
        Ok(self.pos)
    }
}
