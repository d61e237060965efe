// Writing the envelope of the embedded data files (read by crates/whereabouts-core/src/datafile.rs):
// an 8-byte magic, u32 version 1, u32 header size, the rest little-endian u32 words, and a
// 32-bit FNV-1a over all preceding words at the end, so a truncated or altered file is
// refused at load. Used by every script that writes one (build-places, build-search, the
// polygon tree of build-timezones, build-countries and build-geodata's land.bin).

/**
 * Interns strings and lays them out as the core reads them: (n + 1) u32 offsets into a
 * UTF-8 blob zero-padded to a multiple of 4 bytes. Index 0xFFFFFFFF means "none".
 */
export class StringTable {
  static NONE = 0xffffffff;

  #strings = [];
  #ids = new Map();

  /** The index of `s`, added on first sight; NONE for undefined or ''. */
  intern(s) {
    if (s === undefined || s === '') return StringTable.NONE;
    let id = this.#ids.get(s);
    if (id === undefined) {
      id = this.#strings.length;
      this.#strings.push(s);
      this.#ids.set(s, id);
    }
    return id;
  }

  get length() {
    return this.#strings.length;
  }

  /** `{ offsets, blob }` buffers; `blob.length` is the padded blob length for the header. */
  encode() {
    const encoded = this.#strings.map((s) => Buffer.from(s, 'utf8'));
    const offsets = Buffer.alloc((encoded.length + 1) * 4);
    let at = 0;
    encoded.forEach((b, i) => {
      offsets.writeUInt32LE(at, i * 4);
      at += b.length;
    });
    offsets.writeUInt32LE(at, encoded.length * 4);
    const blob = Buffer.alloc(Math.ceil(at / 4) * 4);
    Buffer.concat(encoded).copy(blob);
    return { offsets, blob };
  }
}

/**
 * The bytes of a data file: `header` (its first 16 bytes are filled here: magic, version 1,
 * header size) followed by `sections`, then the checksum. Every section must be a multiple
 * of 4 bytes long.
 */
export function envelope(magic, header, sections) {
  header.write(magic, 0, 'latin1');
  header.writeUInt32LE(1, 8);
  header.writeUInt32LE(header.length, 12);
  const body = Buffer.concat([header, ...sections]);
  if (body.length % 4 !== 0) throw new Error('a data file section is not a multiple of 4 bytes');
  const tail = Buffer.alloc(4);
  tail.writeUInt32LE(checksum(body), 0);
  return Buffer.concat([body, tail]);
}

/** The checksum that ends a data file: 32-bit FNV-1a over the little-endian u32 words of `bytes`. */
export function checksum(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i + 4 <= bytes.length; i += 4) {
    const w = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    h = Math.imul(h ^ w, 0x01000193) >>> 0;
  }
  return h;
}
