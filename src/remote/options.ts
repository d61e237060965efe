/**
 * Settings of the remote fallback (`Engine.open({ remote })`), their defaults and their checks.
 */
import type { RemoteAnswerHook } from './sink.js';

/**
 * When the remote `/process` service is asked (docs/remote.md):
 * - `local`: never; no network at all.
 * - `fallback`: when the local answer is `No matches found` or less accurate than `accuracyThreshold`.
 * - `remote-first`: always first; the local answer when the remote cannot answer.
 */
export type RemoteMode = 'local' | 'fallback' | 'remote-first';

/** The modes, for command lines and checks. */
export const REMOTE_MODES: readonly RemoteMode[] = ['local', 'fallback', 'remote-first'];

/** Options of the remote fallback. Only `urls` and `token` are required (and only outside `local`). */
export interface RemoteOptions {
  /**
   * Base URLs of regional deployments of the same service, including the version segment
   * (`https://eu1.example.com/v2`). With more than one, the fastest that answers is used.
   */
  urls: string[];
  /** The access token sent to the remote (never logged in full). */
  token: string;
  /** Default `local`. */
  mode?: RemoteMode;
  /** Path after the base URL; default `/process` (`/process.php` for PHP-style deployments). */
  path?: string;
  /** Time one attempt may take, connection to last byte; default 3000 ms. */
  timeoutMs?: number;
  /** Further attempts after a network error, HTTP 5xx or `UNKNOWN_ERROR` answer; default 2. */
  retries?: number;
  /** First backoff before a retry, doubled each time, with full jitter; default 100 ms. */
  backoffMs?: number;
  /** `fallback` asks the remote when the local accuracy (metres) is larger than this; default 2000. */
  accuracyThreshold?: number;
  /** How long a remote answer is reused for the same stations; default 600000 ms (10 min); 0 disables. */
  cacheTtlMs?: number;
  /** Most answers kept (least recently used leave first); default 10000. */
  cacheSize?: number;
  /** Consecutive failed calls that open the circuit breaker; default 5. */
  breakerThreshold?: number;
  /** How long an open breaker refuses calls before one probe call may pass; default 30000 ms. */
  breakerCooldownMs?: number;
  /** How often the regions are probed again for speed; default 600000 ms (10 min). */
  reprobeMs?: number;
  /** Largest response body accepted; larger is a failure; default 65536 bytes. */
  maxResponseBytes?: number;
  /** Called with each fresh located remote answer (see {@link RemoteAnswerHook}). */
  onRemoteAnswer?: RemoteAnswerHook;
  /**
   * Learn from fresh located remote answers as low-weight observations of the request's stations
   * (the engine's overlay, docs/learning.md); default true when the engine has a `db` to learn
   * into. The observation's GPS accuracy is the remote's accuracy radius, so it weighs about
   * (10 m / accuracy)^2 of a GPS fix: 1/2,500 for a 500 m answer.
   */
  learn?: boolean;
  /** Clock in ms (tests); default `Date.now`. */
  now?: () => number;
}

/** {@link RemoteOptions} with every default applied and every value checked. */
export interface RemoteSettings {
  urls: URL[];
  token: string;
  mode: RemoteMode;
  timeoutMs: number;
  retries: number;
  backoffMs: number;
  accuracyThreshold: number;
  cacheTtlMs: number;
  cacheSize: number;
  breakerThreshold: number;
  breakerCooldownMs: number;
  reprobeMs: number;
  maxResponseBytes: number;
  onRemoteAnswer: RemoteAnswerHook | undefined;
  now: () => number;
}

function count(
  value: number | undefined,
  name: string,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
) {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`remote.${name} must be an integer from ${min} to ${max}, not ${String(value)}`);
  }
  return value;
}

/** Joins a base URL and the endpoint path, refusing anything but http(s). */
function endpoint(base: string, path: string): URL {
  let url: URL;
  try {
    url = new URL(`${base.replace(/\/+$/, '')}${path}`);
  } catch {
    throw new RangeError(`remote.urls: not a URL: ${base}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RangeError(`remote.urls: only http and https URLs are supported: ${base}`);
  }
  return url;
}

/** Checks `options` and applies the defaults; throws a RangeError naming the bad setting. */
export function remoteSettings(options: RemoteOptions): RemoteSettings {
  const mode = options.mode ?? 'local';
  if (!REMOTE_MODES.includes(mode)) {
    throw new RangeError(`remote.mode must be one of ${REMOTE_MODES.join(', ')}, not ${String(mode)}`);
  }
  const urls = options.urls ?? [];
  if (!Array.isArray(urls) || urls.some((u) => typeof u !== 'string')) {
    throw new RangeError('remote.urls must be an array of base URLs');
  }
  if (mode !== 'local' && urls.length === 0) {
    throw new RangeError(`remote.mode ${mode} needs at least one URL in remote.urls`);
  }
  if (mode !== 'local' && (typeof options.token !== 'string' || options.token.trim() === '')) {
    throw new RangeError(`remote.mode ${mode} needs remote.token`);
  }
  const path = options.path ?? '/process';
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new RangeError('remote.path must start with /');
  }
  const threshold = options.accuracyThreshold ?? 2000;
  if (typeof threshold !== 'number' || !(threshold >= 0)) {
    throw new RangeError('remote.accuracyThreshold must be a number of metres, 0 or more');
  }
  if (options.learn !== undefined && typeof options.learn !== 'boolean') {
    throw new RangeError('remote.learn must be true or false');
  }
  if (options.onRemoteAnswer !== undefined && typeof options.onRemoteAnswer !== 'function') {
    throw new RangeError('remote.onRemoteAnswer must be a function');
  }
  return {
    urls: urls.map((u) => endpoint(u, path)),
    token: typeof options.token === 'string' ? options.token.trim() : '',
    mode,
    timeoutMs: count(options.timeoutMs, 'timeoutMs', 3000, 1, 600_000),
    retries: count(options.retries, 'retries', 2, 0, 10),
    backoffMs: count(options.backoffMs, 'backoffMs', 100, 0, 60_000),
    accuracyThreshold: threshold,
    cacheTtlMs: count(options.cacheTtlMs, 'cacheTtlMs', 600_000, 0),
    cacheSize: count(options.cacheSize, 'cacheSize', 10_000, 1, 10_000_000),
    breakerThreshold: count(options.breakerThreshold, 'breakerThreshold', 5, 1, 1000),
    breakerCooldownMs: count(options.breakerCooldownMs, 'breakerCooldownMs', 30_000, 0),
    reprobeMs: count(options.reprobeMs, 'reprobeMs', 600_000, 0),
    maxResponseBytes: count(options.maxResponseBytes, 'maxResponseBytes', 65_536, 256, 64 * 1024 * 1024),
    onRemoteAnswer: options.onRemoteAnswer,
    now: options.now ?? Date.now,
  };
}
