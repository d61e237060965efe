/**
 * `whereabouts/server`: the HTTP service as a library, for a program that embeds it (what
 * `whereabouts serve` runs): `buildServer` over an open `Engine`, a token store and an
 * observation store. See docs/server.md.
 */
export { ObservationStore, type ObservationStoreOptions } from '../observations/index.js';
export {
  newToken,
  type TokenInput,
  type TokenRecord,
  TokenStore,
  type TokenStoreOptions,
} from '../tokens/index.js';
export { buildServer, DEFAULT_BODY_LIMIT, type ServerOptions } from './app.js';
