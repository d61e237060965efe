/**
 * `whereabouts/geocoding`: the helpers and types of the engine's geocoding beyond its methods
 * (`Engine.search`, `reverse`, `timezone`, `searchAddresses`).
 */
export { type AddressMatch, type AddressQuery, parseAddressQuery } from './addresses.js';
export { preferredLanguages } from './languages.js';
export type { AddressObject, ReverseQuery, ReverseResponse } from './reverse.js';
export {
  DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT,
  MAX_LIMIT as SEARCH_MAX_LIMIT,
  type SearchQuery,
  type SearchResponse,
} from './search.js';
export { describeZone, type TimezoneObject, type TimezoneQuery, type TimezoneResponse } from './timezone.js';
