/**
 * Background sync for a running engine: one sync at a time, every `intervalMs`, sooner with a
 * growing pause after failures, and a reload of the engine whenever a sync wrote a generation.
 */
import type { SyncProgress } from './progress.js';
import { type SyncOptions, type SyncOutcome, syncDatabase } from './run.js';

/** What {@link Engine.open}'s `sync` option takes. */
export interface BackgroundSyncOptions {
  /** An export URL or file, or a Whereabouts server (see `whereabouts sync --from`). */
  from: string;
  /** Token with scope `sync`, for a Whereabouts server. */
  token?: string;
  /** Pause between successful syncs; default one hour. The first sync starts at once. */
  intervalMs?: number;
  /** First pause after a failure, doubled after each further one up to `intervalMs`; default 30 s. */
  retryMs?: number;
  /** Expected SHA-256 of an export. */
  sha256?: string;
}

/** What `engine.syncState()` reports. */
export interface SyncState {
  /** `running` while a sync works; `failed` when the last one failed; `idle` otherwise. */
  state: 'idle' | 'running' | 'failed';
  from: string;
  /** When the last successful sync ended, and what it did. */
  lastSuccess?: { at: Date; outcome: SyncOutcome };
  /** The last failure's message and time (kept after a later success, for the record). */
  lastError?: { at: Date; message: string };
  /** Failures since the last success. */
  failures: number;
  /** When the next sync starts (absent while one runs or after `stop`). */
  nextRunAt?: Date;
  /** Progress of the running sync. */
  progress?: SyncProgress;
}

/** Runs {@link syncDatabase} on a timer for one database. */
export class SyncScheduler {
  readonly #options: SyncOptions;
  readonly #intervalMs: number;
  readonly #retryMs: number;
  readonly #onApplied: () => void;
  readonly #state: SyncState;
  #timer: NodeJS.Timeout | undefined;
  #abort: AbortController | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  /** `onApplied` is called after a sync wrote a generation (the engine reloads there). */
  constructor(db: string, options: BackgroundSyncOptions, onApplied: () => void) {
    const intervalMs = options.intervalMs ?? 3_600_000;
    if (!(intervalMs > 0)) throw new Error('sync.intervalMs must be a positive number of milliseconds');
    this.#intervalMs = intervalMs;
    this.#retryMs = Math.min(options.retryMs ?? 30_000, intervalMs);
    this.#options = { db, from: options.from, token: options.token, sha256: options.sha256 };
    this.#onApplied = onApplied;
    this.#state = { state: 'idle', from: options.from, failures: 0 };
  }

  /** Starts the first sync now. */
  start(): void {
    this.#schedule(0);
  }

  /** A snapshot of the state (a copy: later changes do not show in it). */
  state(): SyncState {
    return structuredClone(this.#state);
  }

  /** Runs a sync now unless one is running; resolves when that sync (or the running one) ends. */
  runNow(): Promise<void> {
    if (this.#running) return this.#running;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Stops the timer and aborts a download in flight; an import already running completes. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#abort?.abort();
    this.#state.nextRunAt = undefined;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#state.nextRunAt = new Date(Date.now() + delayMs);
    // unref: a background sync never keeps the process alive on its own.
    this.#timer = setTimeout(() => void this.runNow(), delayMs).unref();
  }

  async #run(): Promise<void> {
    const s = this.#state;
    s.state = 'running';
    s.nextRunAt = undefined;
    s.progress = undefined;
    this.#abort = new AbortController();
    let delay = this.#intervalMs;
    try {
      const outcome = await syncDatabase({
        ...this.#options,
        signal: this.#abort.signal,
        onProgress: (p) => {
          s.progress = p;
        },
      });
      if (outcome.changed && !this.#stopped) this.#onApplied();
      s.state = 'idle';
      s.lastSuccess = { at: new Date(), outcome };
      s.failures = 0;
    } catch (err) {
      s.state = 'failed';
      s.failures += 1;
      s.lastError = { at: new Date(), message: err instanceof Error ? err.message : String(err) };
      delay = Math.min(this.#intervalMs, this.#retryMs * 2 ** (s.failures - 1));
    } finally {
      s.progress = undefined;
      this.#abort = undefined;
    }
    this.#schedule(delay);
  }
}
