/** GPS fixes of a `/process` request (`gps`, spec 2.5). */
import { GeoMessage } from '../../errors.js';
import type { GpsObservation } from './types.js';
import {
  fieldsOf,
  inRange,
  type Obj,
  type Range,
  r,
  readInt,
  readNumber,
  readString,
  reject,
} from './values.js';

/** A real field of a GPS object: undefined when absent; malformed or out of range is `Invalid request`. */
export function gpsNumber(o: Obj, key: string, range?: Range): number | undefined {
  const n = readNumber(o[key]);
  if (n === undefined) return undefined;
  if (Number.isNaN(n) || (range !== undefined && !inRange(n, range))) reject(GeoMessage.invalidRequest);
  return n;
}

export const NON_NEGATIVE = r(0, Number.MAX_VALUE);

export function parseGps(input: unknown): GpsObservation {
  const item = fieldsOf(input);
  const lat = gpsNumber(item, 'lat', r(-90, 90));
  const lon = gpsNumber(item, 'lon', r(-180, 180));
  if (lat === undefined || lon === undefined) reject(GeoMessage.invalidRequest);
  const fix: GpsObservation = { lat, lon };
  const source = readString(item.source);
  if (source !== undefined) fix.source = source;
  const accuracy = gpsNumber(item, 'accuracy', NON_NEGATIVE);
  if (accuracy !== undefined) fix.accuracy = accuracy;
  const altitude = gpsNumber(item, 'altitude');
  if (altitude !== undefined) fix.altitude = altitude;
  const altitudeAccuracy = gpsNumber(item, 'altitude_accuracy', NON_NEGATIVE);
  if (altitudeAccuracy !== undefined) fix.altitudeAccuracy = altitudeAccuracy;
  const speed = gpsNumber(item, 'speed', NON_NEGATIVE);
  if (speed !== undefined) fix.speed = speed;
  const heading = gpsNumber(item, 'heading', r(0, 360));
  if (heading !== undefined) fix.heading = heading;
  const timestamp = readInt(item.timestamp);
  if (timestamp !== undefined) {
    if (Number.isNaN(timestamp) || timestamp < 0) reject(GeoMessage.invalidRequest);
    fix.timestamp = timestamp;
  }
  return fix;
}
