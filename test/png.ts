/** A small PNG reader for tests: 8-bit RGB or RGBA, non-interlaced (what the renderer writes). */
import { inflateSync } from 'node:zlib';

export interface Image {
  width: number;
  height: number;
  /** 4 bytes (RGBA) a pixel, rows top to bottom. */
  rgba: Uint8Array;
}

export function decodePng(buf: Buffer): Image {
  if (buf.subarray(0, 8).toString('latin1') !== '\x89PNG\r\n\x1a\n') throw new Error('not a PNG');
  let pos = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.subarray(pos + 4, pos + 8).toString('latin1');
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('only 8-bit non-interlaced PNGs');
      channels = data[9] === 2 ? 3 : data[9] === 6 ? 4 : 0;
      if (channels === 0) throw new Error(`colour type ${data[9]}`);
    } else if (type === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(width * height * 4);
  const prev = new Uint8Array(stride);
  const cur = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? (cur[i - channels] as number) : 0;
      const b = prev[i] as number;
      const c = i >= channels ? (prev[i - channels] as number) : 0;
      let pred = 0;
      if (filter === 1) pred = a;
      else if (filter === 2) pred = b;
      else if (filter === 3) pred = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = ((line[i] as number) + pred) & 255;
    }
    for (let x = 0; x < width; x++) {
      for (let k = 0; k < 4; k++) {
        out[(y * width + x) * 4 + k] = k < channels ? (cur[x * channels + k] as number) : 255;
      }
    }
    prev.set(cur);
  }
  return { width, height, rgba: out };
}

/** The pixel of `img` at a longitude and latitude, in tile z/x/y. */
export function pixelAt(img: Image, z: number, x: number, y: number, lon: number, lat: number): number[] {
  const n = 2 ** z;
  const s = Math.sin((lat * Math.PI) / 180);
  const fx = ((lon + 180) / 360) * n - x;
  const fy = (0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * n - y;
  const px = Math.floor(fx * img.width);
  const py = Math.floor(fy * img.height);
  const i = (py * img.width + px) * 4;
  return [img.rgba[i] as number, img.rgba[i + 1] as number, img.rgba[i + 2] as number];
}
