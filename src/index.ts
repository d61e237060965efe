/**
 * Whereabouts: an offline, embeddable cell/WiFi location engine with the request and
 * response shapes of the `/process` geolocation interface.
 *
 * @packageDocumentation
 */
export { type AddressMatch, type AddressQuery, parseAddressQuery } from './addresses.js';
export { Engine, type EngineOptions, type EngineStats } from './engine.js';
export { GeoMessage } from './errors.js';
export {
  type CellObservation,
  type LocateRequest,
  type ParseOptions,
  type ParseResult,
  parseRequest,
  parseRequestText,
  type WifiObservation,
} from './request.js';
export type { FallbackName, ProcessResponse } from './response.js';
export {
  type AddressObject,
  preferredLanguages,
  type ReverseQuery,
  type ReverseResponse,
} from './reverse.js';
export {
  describeZone,
  type TimezoneObject,
  type TimezoneQuery,
  type TimezoneResponse,
} from './timezone.js';
