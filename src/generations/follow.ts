/**
 * A server's part in learning across servers (docs/deploy.md, "Learning across servers"):
 *
 * - **Following**: once a second it asks for the newest publication and, when its database
 *   directory holds another, installs it (src/generations/install.ts) and reloads the engine,
 *   which switches generations while serving as after an import. One indexed query a second
 *   per process: simpler than a LISTEN connection to keep alive, and as robust when the
 *   database comes and goes.
 * - **Compacting**: it tries a session advisory lock on a connection of its own; the holder
 *   is the one compactor and runs a round (src/generations/round.ts) every `intervalMs`. The
 *   lock goes with the session, so when the holder dies (or its connection breaks) another
 *   server takes it at its next try. Correctness does not rest on the lock: a publication is
 *   accepted only on the newest one, so a stale holder's round is refused, never merged.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import { installedPublication, installPublication } from './install.js';
import { foldSubmissions, updateShared, workDirOf } from './round.js';
import type { GenerationStore } from './store.js';

/** The advisory lock whose holder is the compactor: a fixed number of this project's own. */
export const COMPACTOR_LOCK = '8604003733432115810';
/** How often a server looks for a new publication. */
const FOLLOW_MS = 1000;
/** How often a server that is not the compactor tries the lock (at most). */
const ELECT_MS = 5000;

type Log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

/** Options of {@link SharedLearning}. */
export interface SharedLearningOptions {
  store: GenerationStore;
  /** The server's station database directory. */
  db: string;
  /** Switches the engine to the installed generation. */
  reload: () => void;
  /** Rounds this often while compactor; 0: never take the compactor's part. */
  intervalMs: number;
  log: Log;
}

/** Follows publications and takes the compactor's part when elected; see the module comment. */
export class SharedLearning {
  readonly #o: SharedLearningOptions;
  #followTimer: NodeJS.Timeout | undefined;
  #electTimer: NodeJS.Timeout | undefined;
  #following: Promise<void> | undefined;
  #round: Promise<void> | undefined;
  #lock: pg.Client | undefined;
  #leader = false;
  #electing = false;
  #lastRound = 0;
  #closed = false;
  /** The last failure of following, logged once until it changes or following works again. */
  #followProblem: string | undefined;

  constructor(options: SharedLearningOptions) {
    this.#o = options;
  }

  /** Whether this process holds the compactor lock. */
  get compactor(): boolean {
    return this.#leader;
  }

  /** Starts following (and, unless the interval is 0, trying for the compactor lock). */
  start(): void {
    this.#followTimer = setInterval(() => void this.follow(), FOLLOW_MS);
    this.#followTimer.unref();
    if (this.#o.intervalMs > 0) {
      const every = Math.min(ELECT_MS, this.#o.intervalMs);
      this.#electTimer = setInterval(() => void this.#tick(), every);
      this.#electTimer.unref();
      void this.#tick();
    }
  }

  /** Installs the newest publication when the directory holds another; one at a time. */
  follow(): Promise<void> {
    this.#following ??= this.#follow().finally(() => {
      this.#following = undefined;
    });
    return this.#following;
  }

  async #follow(): Promise<void> {
    const { store, db } = this.#o;
    try {
      const id = await store.latestId();
      this.#followProblem = undefined;
      if (id === undefined || id === installedPublication(db)) return;
      const p = await store.latest();
      if (p === undefined) return;
      const switched = await installPublication(store, p, db, { linkFrom: workDirOf(db) });
      if (switched) this.#o.reload();
      this.#o.log('info', 'installed a published station generation', {
        publication: p.id,
        generation: p.generation,
        switched,
      });
    } catch (err) {
      // Another worker installing the same publication holds the lock: it will be there.
      const message = (err as Error).message;
      if (/another import \(pid \d+\)/.test(message) || message === this.#followProblem) return;
      // Once a second while the database is away would flood the log: once per cause.
      this.#followProblem = message;
      this.#o.log('warn', 'following the published station generations failed', { error: message });
    }
  }

  async #tick(): Promise<void> {
    // A try that waits for an unanswering database outlasts a tick: never two at once.
    if (this.#closed || this.#electing) return;
    if (!this.#leader) {
      this.#electing = true;
      try {
        await this.#elect();
      } finally {
        this.#electing = false;
      }
    }
    if (this.#leader && this.#round === undefined && Date.now() - this.#lastRound >= this.#o.intervalMs) {
      this.#lastRound = Date.now();
      this.#round = this.runRound().finally(() => {
        this.#round = undefined;
      });
    }
  }

  /** Tries the compactor lock on a connection of its own; the session keeps it. */
  async #elect(): Promise<void> {
    const client = new pg.Client({
      ...this.#o.store.config,
      application_name: `whereabouts compactor ${hostname()} pid ${process.pid}`,
    });
    const lost = () => {
      if (this.#lock !== client) return;
      this.#lock = undefined;
      this.#leader = false;
      this.#o.log('warn', 'lost the compactor lock (its connection broke)');
      client.end().catch(() => {});
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [
        COMPACTOR_LOCK,
      ]);
      if (r.rows[0]?.ok === true && !this.#closed) {
        this.#lock = client;
        this.#leader = true;
        this.#o.log('info', 'this server is the compactor', { intervalMs: this.#o.intervalMs });
        return;
      }
    } catch {
      // The database is away: the next tick tries again.
    }
    client.removeListener('end', lost);
    await client.end().catch(() => {});
  }

  /** One round now (the compactor's, on its timer): fold the new submissions and publish. */
  async runRound(): Promise<void> {
    const { store, db } = this.#o;
    try {
      const outcome = await updateShared(
        { store, seed: db, work: workDirOf(db), publisher: `${hostname()} pid ${process.pid}` },
        foldSubmissions(store),
      );
      if (outcome.published) {
        this.#o.log('info', 'published a station generation', {
          publication: outcome.published.id,
          generation: outcome.published.generation,
          observations: outcome.observations,
          ...outcome.detail,
        });
        await this.follow();
      }
    } catch (err) {
      this.#o.log('error', 'the learning round failed', { error: (err as Error).message });
    }
  }

  /** Stops following, waits for a round in progress, releases the lock. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#followTimer);
    clearInterval(this.#electTimer);
    await this.#round;
    await this.#following;
    const lock = this.#lock;
    this.#lock = undefined;
    this.#leader = false;
    await lock?.end().catch(() => {});
  }
}
