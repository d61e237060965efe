/** GPS fixes of a `/process` request (`gps`, spec 2.5). */
import { GeoMessage } from '../../errors.js';
import type { GpsObservation } from './types.js';
import { fieldsOf, inRange, type Obj, type Range, r, readString, reject } from './values.js';

/**
 * A real field of a GPS object (spec 2.5: float): undefined when absent (missing or null); a
 * JSON number in range, else `Invalid request`. Unlike the radio fields, a quoted number is
 * refused: fixes are ground truth for learning, and a client that sends strings is not the
 * GPS receiver it claims to be.
 */
export function gpsNumber(o: Obj, key: string, range?: Range): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (range !== undefined && !inRange(v, range)))
    reject(GeoMessage.invalidRequest);
  return v + 0;
}

/** Longest `source` of a GPS fix (spec 2.5 shows `"gps"`; allowed values are not listed). */
export const MAX_GPS_SOURCE = 32;

export const NON_NEGATIVE = r(0, Number.MAX_VALUE);

export function parseGps(input: unknown): GpsObservation {
  const item = fieldsOf(input);
  const lat = gpsNumber(item, 'lat', r(-90, 90));
  const lon = gpsNumber(item, 'lon', r(-180, 180));
  if (lat === undefined || lon === undefined) reject(GeoMessage.invalidRequest);
  const fix: GpsObservation = { lat, lon };
  const source = readString(item.source);
  if (source !== undefined && source.length > MAX_GPS_SOURCE) reject(GeoMessage.invalidRequest);
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
  const timestamp = gpsNumber(item, 'timestamp', NON_NEGATIVE);
  if (timestamp !== undefined) {
    if (!Number.isSafeInteger(timestamp)) reject(GeoMessage.invalidRequest);
    fix.timestamp = timestamp;
  }
  return fix;
}
