//! A minimal protocol-buffers reader: the wire format of vector tiles and glyph ranges, which
//! use only varints, length-delimited fields and packed repeated varints.

/// Why a buffer could not be read as protocol buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PbfError(pub &'static str);

impl std::fmt::Display for PbfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed protocol buffer: {}", self.0)
    }
}

impl std::error::Error for PbfError {}

/// The value of one field as it appears on the wire.
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Field<'a> {
    /// The value as an unsigned integer (varints and fixed-width numbers).
    pub fn uint(&self) -> u64 {
        match *self {
            Field::Varint(v) | Field::Fixed64(v) => v,
            Field::Fixed32(v) => u64::from(v),
            Field::Bytes(_) => 0,
        }
    }

    /// The value of a `sint32`/`sint64` (zigzag) field.
    pub fn sint(&self) -> i64 {
        zigzag(self.uint())
    }

    /// The bytes of a length-delimited field (empty for other wire types).
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Field::Bytes(b) => b,
            _ => &[],
        }
    }
}

/// Decodes a zigzag-encoded signed integer.
pub fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Iterates over the fields of one message: `(field number, value)`.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, PbfError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or(PbfError("varint past the end"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(PbfError("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PbfError> {
        let end = self.pos.checked_add(n).ok_or(PbfError("length overflow"))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(PbfError("field past the end"))?;
        self.pos = end;
        Ok(s)
    }

    /// The next field, `None` at the end of the message.
    pub fn next_field(&mut self) -> Result<Option<(u32, Field<'a>)>, PbfError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = (key >> 3) as u32;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => Field::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            2 => {
                let n = self.varint()? as usize;
                Field::Bytes(self.take(n)?)
            }
            5 => Field::Fixed32(u32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            _ => return Err(PbfError("unsupported wire type")),
        };
        Ok(Some((number, field)))
    }
}

/// The varints of a packed repeated field.
pub fn packed_varints(buf: &[u8]) -> Result<Vec<u64>, PbfError> {
    let mut r = Reader::new(buf);
    let mut out = Vec::with_capacity(buf.len());
    while r.pos < buf.len() {
        out.push(r.varint()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_varint_bytes_and_packed_fields() {
        // field 1 varint 300, field 2 bytes "hi", field 3 packed [1, 150]
        let buf = [
            0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1a, 0x03, 0x01, 0x96, 0x01,
        ];
        let mut r = Reader::new(&buf);
        let (n, f) = r.next_field().unwrap().unwrap();
        assert_eq!((n, f.uint()), (1, 300));
        let (n, f) = r.next_field().unwrap().unwrap();
        assert_eq!((n, f.bytes()), (2, &b"hi"[..]));
        let (n, f) = r.next_field().unwrap().unwrap();
        assert_eq!(n, 3);
        assert_eq!(packed_varints(f.bytes()).unwrap(), vec![1, 150]);
        assert!(r.next_field().unwrap().is_none());
        assert_eq!(zigzag(3), -2);
        assert_eq!(zigzag(4), 2);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert!(Reader::new(&[0x12, 0x05, 1]).next_field().is_err());
        assert!(Reader::new(&[0x08, 0xff]).next_field().is_err());
    }
}
