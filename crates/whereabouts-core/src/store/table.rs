//! The root table of a station shard as FlatBuffers lays it out, read with every offset
//! bounds-checked: what opening a shard of the current format ([`super::shard`]) and of an
//! older one ([`super::legacy`]) both need before they trust a vector.

use std::ops::Range;

pub(crate) fn read_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// `bytes` (a vector's data, as [`RootTable::vector`] found it) as records of `T`.
///
/// # Safety
/// `bytes` starts 8-aligned, as [`RootTable::vector`] checks of every vector it returns.
pub(crate) unsafe fn records<T: super::writer::Record>(bytes: &[u8]) -> &[T] {
    debug_assert!((bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()));
    // SAFETY: aligned (the caller's promise), within `bytes`, and Record types accept any
    // bits.
    unsafe {
        std::slice::from_raw_parts(
            bytes.as_ptr() as *const T,
            bytes.len() / std::mem::size_of::<T>(),
        )
    }
}

/// A shard's root table and its vtable.
pub(crate) struct RootTable<'a> {
    bytes: &'a [u8],
    table: usize,
    vtable: usize,
    vtable_size: usize,
}

impl<'a> RootTable<'a> {
    /// Checks the file identifier and that the bytes are 8-aligned (records are read in
    /// place), and finds the root table's vtable. `Err` says what is wrong.
    pub fn read(bytes: &'a [u8]) -> Result<RootTable<'a>, String> {
        if bytes.len() < 8 || &bytes[4..8] != super::layout::FILE_IDENTIFIER {
            return Err("not a Whereabouts station file".into());
        }
        if !(bytes.as_ptr() as usize).is_multiple_of(8) {
            return Err("mapping is not 8-byte aligned".into());
        }
        let table = read_u32(bytes, 0).ok_or("truncated")? as usize;
        let soffset = read_u32(bytes, table).ok_or("root table out of bounds")? as i32;
        let vtable = usize::try_from(table as i64 - soffset as i64)
            .map_err(|_| "vtable out of bounds".to_string())?;
        let vtable_size = read_u16(bytes, vtable).ok_or("vtable out of bounds")? as usize;
        Ok(RootTable {
            bytes,
            table,
            vtable,
            vtable_size,
        })
    }

    /// Where field `id` is stored, if the table has it.
    fn field(&self, id: usize) -> Option<usize> {
        if 4 + 2 * id >= self.vtable_size {
            return None;
        }
        match read_u16(self.bytes, self.vtable + 4 + 2 * id)? {
            0 => None,
            o => Some(self.table + o as usize),
        }
    }

    pub fn u32_field(&self, id: usize) -> Option<u32> {
        read_u32(self.bytes, self.field(id)?)
    }

    pub fn u64_field(&self, id: usize) -> Option<u64> {
        read_u64(self.bytes, self.field(id)?)
    }

    /// The bytes of vector field `id`, of `element_size`-byte elements: `None` when the table
    /// has no such field; `Err` (naming the vector `name`) when it runs past the end or its
    /// data is not 8-aligned.
    pub fn vector(
        &self,
        id: usize,
        element_size: usize,
        name: &str,
    ) -> Result<Option<Range<usize>>, String> {
        let Some(at) = self.field(id) else {
            return Ok(None);
        };
        let rel = read_u32(self.bytes, at).ok_or("field out of bounds")? as usize;
        let len_at = at.checked_add(rel).ok_or("vector offset overflows")?;
        let n = read_u32(self.bytes, len_at).ok_or("vector out of bounds")? as usize;
        let start = len_at + 4;
        let end = n
            .checked_mul(element_size)
            .and_then(|s| s.checked_add(start))
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("{name} vector runs past the end"))?;
        if !start.is_multiple_of(8) {
            return Err(format!("{name} vector is misaligned"));
        }
        Ok(Some(start..end))
    }
}
