/**
 * Access tokens: settings, daily balances, rate limits and restrictions (spec 2.1, 5, 8).
 */
export { GroupCommit, type GroupCommitOptions } from './group-commit.js';
export { maskToken } from './mask.js';
export { isPostgresUrl, openTokenStorage, STORE_URL_ENV } from './open.js';
export {
  migrateTokens,
  PG_TOKENS_SCHEMA_VERSION,
  PgTokenStore,
  type PgTokenStoreOptions,
} from './pg-store.js';
export {
  ipAllowed,
  ipEntryProblem,
  MAX_IPS,
  MAX_REFERRERS,
  referrerAllowed,
  referrerPatternProblem,
} from './restrictions.js';
export { type MaybePromise, StoreUnavailableError, type TokenStorage } from './storage.js';
export {
  type AdmitOutcome,
  type ChargeOutcome,
  MAP_SERVICES,
  type MapService,
  type MeteredService,
  newToken,
  SCOPES,
  type Scope,
  TOKEN_DEFAULTS,
  TokenError,
  type TokenInput,
  type TokenRecord,
  TokenStore,
  type TokenStoreOptions,
  utcDay,
} from './store.js';
