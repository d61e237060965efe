/** The request body's top-level fields (spec 2.2): token, id, ip, switches, fallbacks, then the lists. */
import { isIP } from 'node:net';
import { GeoMessage, type GeoMessageText } from '../../errors.js';
import { MCC_RANGE, parseRadioField, readCells, UNKNOWN_LIMITS } from './cells.js';
import { parseGps } from './gps.js';
import type { RequestReader } from './reader.js';
import { DEFAULT_MAX_CELLS, MAX_GPS, MAX_WIFI, type ParseOptions } from './types.js';
import { fieldsOf, inRange, readArray, readChoice, readInt, readString, reject } from './values.js';
import { readWifi } from './wifi.js';

export const MAX_FALLBACK_NAMES = 16;

export function readBody(
  r: RequestReader,
  input: unknown,
  options: ParseOptions,
): GeoMessageText | undefined {
  const value = fieldsOf(input);
  let tokenField: unknown;
  let idField: unknown;
  let ipField: unknown;
  let languageField: unknown;
  let btField: unknown;
  let addressField: unknown;
  let metadataField: unknown;
  let geolocationField: unknown;
  let sandboxField: unknown;
  let fallbacksField: unknown;
  let gpsField: unknown;
  let cellsField: unknown;
  let wifiField: unknown;
  let radioField: unknown;
  let mccField: unknown;
  let mncField: unknown;
  // One `for...in` rather than a read by name per field: bodies come in many shapes (which
  // optional fields a client sends), so a read by name is a megamorphic lookup, mostly of an
  // absent field, the slowest case (16 cost about 0.37 us, the loop over 5 to 7 keys 0.1 us).
  // Every field is thus read once, before any check: a getter that throws makes the request
  // `Invalid request` whatever else is wrong with it. The most frequent keys come first, as
  // a switch compares in order. (Cells and access points come in few shapes: read by name.)
  for (const key in value) {
    switch (key) {
      case 'cells':
        cellsField = value[key];
        break;
      case 'wifi':
        wifiField = value[key];
        break;
      case 'radio':
        radioField = value[key];
        break;
      case 'mcc':
        mccField = value[key];
        break;
      case 'mnc':
        mncField = value[key];
        break;
      case 'token':
        tokenField = value[key];
        break;
      case 'address':
        addressField = value[key];
        break;
      case 'id':
        idField = value[key];
        break;
      case 'ip':
        ipField = value[key];
        break;
      case 'accept-language':
        languageField = value[key];
        break;
      case 'bt':
        btField = value[key];
        break;
      case 'metadata':
        metadataField = value[key];
        break;
      case 'geolocation':
        geolocationField = value[key];
        break;
      case 'gps_sandbox':
        sandboxField = value[key];
        break;
      case 'fallbacks':
        fallbacksField = value[key];
        break;
      case 'gps':
        gpsField = value[key];
        break;
    }
  }

  // Authentication is answered before any parsing error, as the service would: a client
  // without a token learns that first.
  const token = readString(tokenField);
  if (token === undefined && options.requireToken === true) reject(GeoMessage.invalidToken);
  r.token = token;

  const idText = readString(idField);
  if (idText !== undefined && !/^[a-z0-9]{1,20}$/i.test(idText)) reject(GeoMessage.invalidRequest);
  // Device slots are counted per id, so "ABC1" and "abc1" must be the same device.
  r.id = idText?.toLowerCase();

  const ip = readString(ipField);
  if (ip !== undefined && isIP(ip) === 0) reject(GeoMessage.invalidRequest);
  r.ip = ip;

  r.acceptLanguage = readString(languageField);
  r.bt = readChoice<0 | 1 | 2>(btField, 2, 1);
  r.address = readChoice<0 | 1 | 2>(addressField, 2, 1);
  r.metadata = readChoice<0 | 1>(metadataField, 1, 0);
  r.geolocation = readChoice<0 | 1>(geolocationField, 1, 1);
  r.gpsSandbox = readChoice<0 | 1>(sandboxField, 1, 1);
  readFallbacks(r, fallbacksField);
  const rawGps = readArray(gpsField, MAX_GPS);
  r.gps = rawGps.length === 0 ? undefined : rawGps.map(parseGps);

  const maxCells =
    typeof options.maxCells === 'number' && Number.isSafeInteger(options.maxCells) && options.maxCells > 0
      ? options.maxCells
      : DEFAULT_MAX_CELLS;
  const rawCells = readArray(cellsField, maxCells);
  const rawWifi = readArray(wifiField, MAX_WIFI);

  const topRadio = parseRadioField(radioField);
  const topMcc = readInt(mccField);
  if (topMcc !== undefined && !inRange(topMcc, MCC_RANGE)) reject(GeoMessage.invalidMcc);
  // Only the union of the radios' ranges can be checked here: which radio's range applies
  // is known per cell, where the inherited value is checked again.
  const topMnc = readInt(mncField);
  if (topMnc !== undefined && !inRange(topMnc, UNKNOWN_LIMITS.mnc)) reject(GeoMessage.invalidMnc);

  readCells(r, rawCells, topRadio, topMcc, topMnc);
  readWifi(r, rawWifi);

  if (r.cellCount === 0 && r.apCount === 0 && r.ipf === 0) {
    // Cells whose fields were missing or malformed were rejected above with their own message,
    // so sent-but-empty here means every cell had a lac or cid outside its radio's range.
    // Returned, not thrown: this is the one rejection common in real traffic (a scan of
    // randomised MACs), and a throw costs about a microsecond.
    return rawCells.length > 0 ? GeoMessage.noValidCells : GeoMessage.noNetworkData;
  }
  return undefined;
}

/** Reads `fallbacks` (spec 2.6) into `r`'s switches, the defaults applied. */
export function readFallbacks(r: RequestReader, fallbacks: unknown): void {
  r.lacf = 1;
  r.scf = 1;
  r.ipf = 0;
  if (fallbacks === undefined || fallbacks === null) return;
  if (Array.isArray(fallbacks)) {
    // PHP encodes an empty associative array as [], and "array" in spec 2.6 invites a list of
    // switch names; both read naturally as "these fallbacks on".
    if (fallbacks.length > MAX_FALLBACK_NAMES) reject(GeoMessage.invalidRequest);
    for (const name of fallbacks) {
      if (typeof name !== 'string') reject(GeoMessage.invalidRequest);
      const key = name.trim().toLowerCase();
      if (key === 'all' || key === 'ipf') r.ipf = 1;
      if (key === 'all' || key === 'scf') r.scf = 1;
      if (key === 'all' || key === 'lacf') r.lacf = 1;
    }
    return;
  }
  const v = fieldsOf(fallbacks);
  // -1 stands for "all not given", which leaves the defaults in place.
  const all = readChoice<0 | 1 | -1>(v.all, 1, -1);
  if (all !== -1) {
    r.ipf = all;
    r.scf = all;
    r.lacf = all;
  }
  r.ipf = readChoice(v.ipf, 1, r.ipf);
  r.scf = readChoice(v.scf, 1, r.scf);
  r.lacf = readChoice(v.lacf, 2, r.lacf);
}
