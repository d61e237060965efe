/**
 * Whereabouts: an offline, embeddable cell/WiFi location engine with the request and
 * response shapes of the `/process` geolocation interface.
 *
 * The main entry is the `Engine` and what its methods take and give. More: `whereabouts/geocoding`
 * (language and address helpers, search limits), `whereabouts/remote` (the remote fallback's
 * status types), `whereabouts/server` (the HTTP service as a library).
 *
 * @packageDocumentation
 */
export {
  type CompactSummary,
  Engine,
  type EngineOptions,
  type EngineStats,
  type NetworkStats,
  type NetworkStatsFile,
  type Quantiles,
  type StationChangesPage,
  type StationChangesQuery,
} from './engine.js';
export { GeoMessage } from './errors.js';
export type { ReverseQuery, ReverseResponse } from './geocoding/reverse.js';
export type { SearchQuery, SearchResponse } from './geocoding/search.js';
export type { TimezoneQuery, TimezoneResponse } from './geocoding/timezone.js';
export type { LearnSummary } from './learning/submissions.js';
export {
  ACCURACY_95_FACTOR,
  type CountryResponse,
  type GeolocateResponse,
  type IchnaeaError,
  type IchnaeaErrorItem,
} from './locating/ichnaea.js';
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
export type { RemoteAnswerHook, RemoteObservation, RemoteOptions } from './remote/index.js';
export type { SyncProgress } from './sync/progress.js';
export { type SyncOptions, type SyncOutcome, syncDatabase } from './sync/run.js';
export type { BackgroundSyncOptions, SyncState } from './sync/scheduler.js';
export {
  type UpgradeOptions,
  type UpgradeOutcome,
  type UpgradeProgress,
  upgradeDatabase,
} from './upgrade.js';
