//! The envelope shared by the embedded data files (`land.bin`, `timezones.bin`, `places.bin`,
//! written by `scripts/build-*.mjs`): an 8-byte magic, a u32 version (1), a u32 header size, the
//! rest as little-endian u32 words, and an FNV-1a checksum of all preceding words at the end.
//! The checksum must match the build scripts' exactly, so it is computed in one place.

/// Checks what the header alone can tell of a file of `len` bytes, from `head` (its first
/// `min(len, header)` bytes): the length, magic, version and header size. What the full
/// check adds is the checksum ([`check_checksum`]); each format adds its section sizes.
pub(crate) fn check_head(
    head: &[u8],
    len: usize,
    magic: &[u8; 8],
    header: usize,
    what: &str,
) -> Result<(), String> {
    if len < header + 4 || !len.is_multiple_of(4) || head.len() < header {
        return Err(format!("{len} bytes is not a {what}"));
    }
    if &head[..8] != magic {
        return Err(format!("not a {what} (bad magic)"));
    }
    if u32_at(head, 8) != 1 {
        return Err(format!("unsupported version {}", u32_at(head, 8)));
    }
    if u32_at(head, 12) as usize != header {
        return Err("bad header size".into());
    }
    Ok(())
}

/// Checks the FNV-1a checksum that ends a whole file `b` whose envelope [`check_head`] passed.
pub(crate) fn check_checksum(b: &[u8]) -> Result<(), String> {
    let body = b.len() - 4;
    if fnv1a_words(&b[..body]) != u32_at(b, body) {
        return Err("checksum mismatch".into());
    }
    Ok(())
}

/// The string table of a data file, as the build scripts write it (scripts/datafile.mjs):
/// `n + 1` u32 offsets, then the UTF-8 blob they point into. One reader for every file.
pub(crate) struct StringTable {
    text: String,
    offsets: Vec<u32>,
}

/// The string index that means "none".
pub(crate) const NO_STRING: u32 = u32::MAX;

impl StringTable {
    /// Reads `n` strings: offsets at `b[at..]`, then the blob of `blob_len` bytes; the reason
    /// when they are out of bounds or not sound.
    pub(crate) fn read(
        b: &[u8],
        at: usize,
        n: usize,
        blob_len: usize,
    ) -> Result<StringTable, String> {
        let blob_at = n
            .checked_add(1)
            .and_then(|k| k.checked_mul(4))
            .and_then(|k| k.checked_add(at))
            .filter(|&k| k.checked_add(blob_len).is_some_and(|end| end <= b.len()))
            .ok_or("the string table is out of bounds")?;
        let offsets: Vec<u32> = (0..=n).map(|i| u32_at(b, at + i * 4)).collect();
        if offsets[0] != 0
            || offsets.windows(2).any(|w| w[0] > w[1])
            || offsets[n] as usize > blob_len
        {
            return Err("string offsets out of order".into());
        }
        let text = std::str::from_utf8(&b[blob_at..blob_at + offsets[n] as usize])
            .map_err(|_| "strings are not UTF-8")?
            .to_owned();
        if offsets.iter().any(|&o| !text.is_char_boundary(o as usize)) {
            return Err("a string offset splits a character".into());
        }
        Ok(StringTable { text, offsets })
    }

    /// Number of strings.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// String `i`; `None` for [`NO_STRING`] or an index out of range.
    pub(crate) fn get(&self, i: u32) -> Option<&str> {
        let a = *self.offsets.get(i as usize)? as usize;
        let z = *self.offsets.get((i as usize).checked_add(1)?)? as usize;
        Some(&self.text[a..z])
    }
}

/// The u32 at byte `o`; callers have checked the bounds.
pub(crate) fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// The f64 at byte `o`; callers have checked the bounds.
pub(crate) fn f64_at(b: &[u8], o: usize) -> f64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    f64::from_le_bytes(a)
}

/// 32-bit FNV-1a over little-endian u32 words.
pub(crate) fn fnv1a_words(b: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for w in b.chunks_exact(4) {
        h = (h ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]])).wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(magic: &[u8; 8], header: usize, words: usize) -> Vec<u8> {
        let mut b = magic.to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(header as u32).to_le_bytes());
        b.resize(header + words * 4, 7);
        let sum = fnv1a_words(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    fn table(offsets: &[u32], blob: &[u8]) -> Vec<u8> {
        let mut b: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        b.extend_from_slice(blob);
        b
    }

    #[test]
    fn reads_a_string_table_and_refuses_an_unsound_one() {
        let b = table(&[0, 5, 5, 8], b"hallo\xc3\xa4b");
        let t = StringTable::read(&b, 0, 3, 8).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(
            [t.get(0), t.get(1), t.get(2), t.get(3), t.get(NO_STRING)],
            [Some("hallo"), Some(""), Some("äb"), None, None]
        );
        let bad = |offsets: &[u32], blob: &[u8], blob_len| {
            StringTable::read(&table(offsets, blob), 0, offsets.len() - 1, blob_len)
                .err()
                .unwrap_or_default()
        };
        assert_eq!(bad(&[0, 5, 3], b"hallo", 5), "string offsets out of order");
        assert_eq!(bad(&[0, 6], b"hallo", 5), "string offsets out of order");
        assert_eq!(
            bad(&[0, 5], b"hallo", 9),
            "the string table is out of bounds"
        );
        assert_eq!(bad(&[0, 3], b"ha\xff", 3), "strings are not UTF-8");
        assert_eq!(
            bad(&[0, 2, 4], b"h\xc3\xa4b", 4),
            "a string offset splits a character"
        );
    }

    /// What a full read checks of the envelope: the header, then the checksum.
    fn check_envelope(b: &[u8], magic: &[u8; 8], header: usize, what: &str) -> Result<(), String> {
        check_head(b, b.len(), magic, header, what)?;
        check_checksum(b)
    }

    #[test]
    fn accepts_a_sound_file_and_names_what_is_wrong_otherwise() {
        let b = file(b"WBTEST01", 16, 3);
        assert_eq!(check_envelope(&b, b"WBTEST01", 16, "test file"), Ok(()));
        assert!(check_envelope(&b, b"WBOTHER1", 16, "test file")
            .unwrap_err()
            .contains("bad magic"));
        assert_eq!(
            check_envelope(&b, b"WBTEST01", 20, "test file").unwrap_err(),
            "bad header size"
        );
        let mut flipped = b.clone();
        flipped[20] ^= 1;
        assert_eq!(
            check_envelope(&flipped, b"WBTEST01", 16, "test file").unwrap_err(),
            "checksum mismatch"
        );
        assert!(check_envelope(&b[..b.len() - 1], b"WBTEST01", 16, "test file").is_err());
        assert!(check_envelope(&[], b"WBTEST01", 16, "test file").is_err());
    }
}
