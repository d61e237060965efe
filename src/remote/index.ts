/**
 * `whereabouts/remote`: the remote fallback's options and status types. The fallback is a
 * client of another `/process` service (regions, retries, circuit breaker, cache) and the
 * policies that decide when to ask it (`policy.ts`). See docs/remote.md.
 */
export type { BreakerState } from './breaker.js';
export { REMOTE_MODES, type RemoteMode, type RemoteOptions } from './options.js';
export type { RemoteStatus } from './policy.js';
export type { RegionStatus } from './regions.js';
export type { RemoteAnswerHook, RemoteObservation } from './sink.js';
