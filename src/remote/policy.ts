/**
 * The remote policies (`local`, `fallback`, `remote-first`): which answer a request gets when a
 * remote `/process` service may be asked, the answer cache, and the hook for remote answers.
 *
 * `balance` (docs/remote.md): a fresh remote answer carries the remote token's balance as the
 * remote reported it; an answer from the cache carries none (that balance is stale), and
 * neither does a local answer.
 */
import { GeoMessage } from '../errors.js';
import type { LocateRequest } from '../locating/request/index.js';
import type { ProcessResponse } from '../locating/response.js';
import { AnswerCache, cacheKey } from './cache.js';
import { type ClientStatus, RemoteClient } from './client.js';
import { type RemoteMode, type RemoteOptions, type RemoteSettings, remoteSettings } from './options.js';
import { remoteBody } from './wire.js';

/** The remote layer's state for health checks and the curious. */
export interface RemoteStatus extends ClientStatus {
  mode: RemoteMode;
  cache: { entries: number; hits: number; misses: number };
}

/** See the module comment. */
export class RemotePolicy {
  readonly #settings: RemoteSettings;
  readonly #client: RemoteClient;
  readonly #cache: AnswerCache;

  /** Checks the options (throws a RangeError naming a bad one); opens no connection yet. */
  constructor(options: RemoteOptions, random?: () => number) {
    this.#settings = remoteSettings(options);
    this.#client = new RemoteClient(this.#settings, random);
    this.#cache = new AnswerCache(this.#settings.cacheSize, this.#settings.cacheTtlMs, this.#settings.now);
  }

  /** The policy in force. */
  get mode(): RemoteMode {
    return this.#settings.mode;
  }

  /**
   * The answer to a validated request under the policy; `local` solves it locally (called at
   * most once, and only when needed). Never rejects for a remote's trouble.
   */
  async answer(request: LocateRequest, local: () => ProcessResponse): Promise<ProcessResponse> {
    // A request that wants no location (geolocation 0) has nothing to ask anyone.
    if (this.mode === 'local' || request.geolocation === 0) return local();
    if (this.mode === 'fallback') {
      const mine = local();
      if (!this.#wantsRemote(mine)) return mine;
      const theirs = await this.#ask(request);
      return theirs === undefined ? mine : better(mine, theirs);
    }
    const theirs = await this.#ask(request);
    if (theirs?.status === 'ok') return theirs;
    // The remote is unreachable or knows nothing: the local answer, if it has one.
    const mine = local();
    return mine.status === 'ok' || theirs === undefined ? mine : theirs;
  }

  /** Mode, breaker, regions, cache and last error; the token masked. */
  status(): RemoteStatus {
    return { mode: this.mode, ...this.#client.status(), cache: this.#cache.stats() };
  }

  /** Closes the remote connections. */
  close(): void {
    this.#client.close();
  }

  #wantsRemote(mine: ProcessResponse): boolean {
    if (mine.status === 'ok') return (mine.accuracy ?? Infinity) > this.#settings.accuracyThreshold;
    return mine.message === GeoMessage.noMatches;
  }

  /** The remote's answer (cached or fresh), or undefined when it could not answer. */
  async #ask(request: LocateRequest): Promise<ProcessResponse | undefined> {
    const key = cacheKey(request);
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached;
    const result = await this.#client.call(remoteBody(request, this.#settings.token));
    if (!result.ok) return undefined;
    const { response, byFallback } = result.reply;
    const { balance: _stale, balance_slots: _staleSlots, ...kept } = response;
    this.#cache.set(key, kept);
    if (response.status === 'ok' && !byFallback) this.#tell(request, response, result.url);
    return response;
  }

  #tell(request: LocateRequest, response: ProcessResponse, url: URL): void {
    const hook = this.#settings.onRemoteAnswer;
    if (hook === undefined) return;
    try {
      hook(request, {
        cells: request.cells,
        wifi: request.wifi,
        lat: response.lat as number,
        lon: response.lon as number,
        accuracy: response.accuracy as number,
        receivedAt: this.#settings.now(),
        url: url.href,
      });
    } catch {
      // The hook's own trouble must not cost the caller the answer.
    }
  }
}

/** The more accurate of a local and a remote answer; the local one when the remote has none. */
function better(mine: ProcessResponse, theirs: ProcessResponse): ProcessResponse {
  if (theirs.status !== 'ok') return mine;
  if (mine.status !== 'ok') return theirs;
  return (theirs.accuracy as number) < (mine.accuracy as number) ? theirs : mine;
}
