// Reads data/places.bin (layout: crates/whereabouts-core/src/places.rs) in JavaScript, for the
// builds and benches that need the places without the native addon: the country polygons'
// labels (scripts/build-countries.mjs) and the reverse bench's baseline (bench/reverse.ts).

import fs from 'node:fs';

/**
 * The places of a places file, in file order, as { lat, lon, population, cc } (cc: ISO
 * 3166-1 alpha-2, upper case). Names are not decoded: no reader here needs them.
 */
export function readPlaces(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 0, 8) !== 'WBPLACE1') throw new Error(`${file} is not a places file`);
  const n = b.readUInt32LE(16);
  const places = [];
  for (let i = 0; i < n; i++) {
    const o = 32 + i * 28;
    places.push({
      lat: b.readInt32LE(o) * 1e-5,
      lon: b.readInt32LE(o + 4) * 1e-5,
      population: b.readUInt32LE(o + 8),
      cc: String.fromCharCode(b[o + 24], b[o + 25]),
    });
  }
  return places;
}
