/**
 * Whereabouts: an offline, embeddable cell/WiFi location engine with the request and
 * response shapes of the `/process` geolocation interface.
 *
 * @packageDocumentation
 */

export {
  type CompactSummary,
  Engine,
  type EngineOptions,
  type EngineStats,
  type StationChangesPage,
  type StationChangesQuery,
} from './engine.js';
export { GeoMessage } from './errors.js';
export { type AddressMatch, type AddressQuery, parseAddressQuery } from './geocoding/addresses.js';
export {
  type AddressObject,
  preferredLanguages,
  type ReverseQuery,
  type ReverseResponse,
} from './geocoding/reverse.js';
export {
  DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT,
  MAX_LIMIT as SEARCH_MAX_LIMIT,
  type SearchQuery,
  type SearchResponse,
} from './geocoding/search.js';
export {
  describeZone,
  type TimezoneObject,
  type TimezoneQuery,
  type TimezoneResponse,
} from './geocoding/timezone.js';
export type { LearnSummary } from './learning/submissions.js';
export {
  type CellObservation,
  type LocateRequest,
  type ParseOptions,
  type ParseResult,
  parseRequest,
  parseRequestText,
  type WifiObservation,
} from './locating/request/index.js';
export type { FallbackName, ProcessResponse } from './locating/response.js';
export {
  type BreakerState,
  REMOTE_MODES,
  type RegionStatus,
  type RemoteAnswerHook,
  type RemoteMode,
  type RemoteObservation,
  type RemoteOptions,
  type RemoteStatus,
} from './remote/index.js';
export type { SyncProgress } from './sync/progress.js';
export { type SyncOptions, type SyncOutcome, syncDatabase } from './sync/run.js';
export type { BackgroundSyncOptions, SyncState } from './sync/scheduler.js';
export {
  type UpgradeOptions,
  type UpgradeOutcome,
  type UpgradeProgress,
  upgradeDatabase,
} from './upgrade.js';
