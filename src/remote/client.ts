/**
 * The remote `/process` client: one call = attempts over the regions with retries, backoff
 * and jitter, behind a circuit breaker. Knows nothing of policies or caching (src/remote/policy.ts).
 */
import { maskToken } from '../tokens/mask.js';
import { type BreakerState, CircuitBreaker } from './breaker.js';
import type { RemoteSettings } from './options.js';
import { type RegionStatus, Regions } from './regions.js';
import { Transport, TransportError } from './transport.js';
import { type RemoteReply, readReply } from './wire.js';

/** Upper bound of one backoff, whatever the attempt number. */
const MAX_BACKOFF_MS = 5_000;

/** What one call brought: an answer to use, or why there is none. */
export type CallResult =
  | { ok: true; reply: Extract<RemoteReply, { kind: 'answer' }>; url: URL }
  | { ok: false; reason: string };

/** The client's state for health checks; the token appears only masked. */
export interface ClientStatus {
  token: string;
  breaker: BreakerState;
  consecutive_failures: number;
  regions: RegionStatus[];
  /** The reason of the last failed or refused call, if any. */
  last_error: string | undefined;
}

/** See the module comment. */
export class RemoteClient {
  readonly #settings: RemoteSettings;
  readonly #transport: Transport;
  readonly #breaker: CircuitBreaker;
  readonly #regions: Regions;
  readonly #random: () => number;
  #lastError: string | undefined;

  constructor(settings: RemoteSettings, random: () => number = Math.random) {
    this.#settings = settings;
    this.#random = random;
    this.#transport = new Transport(settings.maxResponseBytes);
    this.#breaker = new CircuitBreaker(settings.breakerThreshold, settings.breakerCooldownMs, settings.now);
    this.#regions = new Regions(settings.urls, (url) => this.#probe(url), settings.reprobeMs, settings.now);
  }

  /** Sends one spec 2.2 body; never rejects. */
  async call(body: string): Promise<CallResult> {
    if (!this.#breaker.allow()) return { ok: false, reason: 'the circuit breaker is open' };
    const urls = await this.#regions.ordered();
    let reason = '';
    for (let attempt = 0; attempt <= this.#settings.retries; attempt++) {
      if (attempt > 0) await sleep(this.#backoff(attempt));
      // Each retry goes to the next region: a failing one is the likeliest to fail again.
      const url = urls[attempt % urls.length] as URL;
      const reply = await this.#attempt(url, body);
      if (reply.kind === 'answer') {
        this.#breaker.success();
        this.#regions.answered(url);
        return { ok: true, reply, url };
      }
      reason = `${url.host}: ${reply.reason}`;
      if (reply.kind === 'refused') {
        this.#breaker.success();
        this.#regions.answered(url);
        return this.#failed(reason);
      }
      this.#regions.failed(url);
      if (!reply.retry) break;
    }
    this.#breaker.failure();
    return this.#failed(reason);
  }

  /** Breaker, regions and last error, with the token masked. */
  status(): ClientStatus {
    return {
      token: maskToken(this.#settings.token),
      breaker: this.#breaker.state,
      consecutive_failures: this.#breaker.failures,
      regions: this.#regions.status(),
      last_error: this.#lastError,
    };
  }

  /** Closes kept-alive sockets. */
  close(): void {
    this.#transport.close();
  }

  #failed(reason: string): CallResult {
    this.#lastError = reason;
    return { ok: false, reason };
  }

  async #attempt(url: URL, body: string): Promise<RemoteReply> {
    try {
      const { status, text } = await this.#transport.post(url, body, this.#settings.timeoutMs);
      return readReply(status, text);
    } catch (err) {
      const e = err instanceof TransportError ? err : new TransportError('network', String(err));
      // A body too large is garbage, not bad luck: another try brings the same.
      return { kind: 'failed', reason: e.message, retry: e.kind !== 'too-large' };
    }
  }

  /** Full jitter: a random wait up to the doubled backoff, so retrying clients spread out. */
  #backoff(attempt: number): number {
    const cap = Math.min(MAX_BACKOFF_MS, this.#settings.backoffMs * 2 ** (attempt - 1));
    return Math.round(this.#random() * cap);
  }

  /**
   * A probe is a `/process` request without stations: it costs nothing (errors are not charged,
   * spec 7.1) and any well-formed answer below HTTP 500 shows the region is up.
   */
  async #probe(url: URL): Promise<number | undefined> {
    const started = performance.now();
    const body = JSON.stringify({ token: this.#settings.token });
    try {
      const { status, text } = await this.#transport.post(url, body, this.#settings.timeoutMs);
      if (readReply(status, text).kind === 'failed') return undefined;
      return Math.max(0, Math.round(performance.now() - started));
    } catch {
      return undefined;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
