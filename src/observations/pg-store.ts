/**
 * GPS submissions in PostgreSQL, shared by several servers (docs/deploy.md, "Learning across
 * servers"): the submissions of one event-loop turn (or `groupMs`) go in as one INSERT of many
 * rows, and each caller's promise resolves after that statement committed, so a submission
 * acknowledged as stored is durable. A batch that fails stores nothing and rejects all its
 * callers. The learning round (src/generations/round.ts) reads the table.
 */
import type pg from 'pg';
import { openLearningPool } from '../generations/schema.js';
import { type Observation, type ObservationRow, type ObservationStorage, observationRows } from './store.js';

/** Options of {@link PgObservationStore.open}. */
export interface PgObservationStoreOptions {
  /** Connections in the pool (default 2). */
  poolSize?: number;
  /** Gather submissions for this long before inserting (default 0: the next event-loop turn). */
  groupMs?: number;
  /** How long to wait for a connection before failing (default 5000 ms). */
  connectTimeoutMs?: number;
}

interface Pending {
  rows: ObservationRow[];
  resolve: (ids: number[]) => void;
  reject: (e: unknown) => void;
}

/** Most rows in one INSERT. */
const MAX_ROWS = 2000;

/** GPS submissions in PostgreSQL; see the module comment. */
export class PgObservationStore implements ObservationStorage {
  #queue: Pending[] = [];
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly groupMs: number,
  ) {}

  /** Connects and brings the learning schema up to date; rejects when PostgreSQL cannot be reached. */
  static async open(url: string, options: PgObservationStoreOptions = {}): Promise<PgObservationStore> {
    const { pool } = await openLearningPool(url, options);
    return new PgObservationStore(pool, options.groupMs ?? 0);
  }

  add(o: Observation): Promise<number> {
    return this.addAll([o]).then((ids) => ids[0] as number);
  }

  /** Stores submissions all or none; resolves with their ids after COMMIT. Checks as {@link observationRows}. */
  addAll(observations: readonly Observation[]): Promise<number[]> {
    if (this.#closed) return Promise.reject(new Error('the observation store is closed'));
    let rows: ObservationRow[];
    try {
      rows = observationRows(observations);
    } catch (err) {
      return Promise.reject(err);
    }
    if (rows.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.#queue.push({ rows, resolve, reject });
      if (this.#timer === undefined)
        this.#timer =
          this.groupMs > 0
            ? setTimeout(() => this.#flush(), this.groupMs)
            : setImmediate(() => this.#flush());
    });
  }

  async count(): Promise<number> {
    const r = await this.pool.query<{ n: number }>('SELECT count(*)::bigint AS n FROM observations');
    return r.rows[0]?.n ?? 0;
  }

  /** Inserts what is waiting, then closes the connections. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while (this.#queue.length > 0 || this.#inFlight.size > 0) {
      this.#flush();
      await Promise.allSettled([...this.#inFlight]);
    }
    await this.pool.end().catch(() => {});
  }

  #flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer as NodeJS.Timeout);
      clearImmediate(this.#timer as NodeJS.Immediate);
      this.#timer = undefined;
    }
    while (this.#queue.length > 0) {
      // Whole submissions per batch (a geosubmit batch stays in one statement).
      const batch: Pending[] = [];
      let n = 0;
      while (
        this.#queue.length > 0 &&
        (batch.length === 0 || n + (this.#queue[0]?.rows.length ?? 0) <= MAX_ROWS)
      ) {
        const p = this.#queue.shift() as Pending;
        batch.push(p);
        n += p.rows.length;
      }
      const run = this.#insert(batch).finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }
  }

  /** One statement (atomic on its own) for the batch; ids come back in insertion order. */
  async #insert(batch: Pending[]): Promise<void> {
    const rows = batch.flatMap((p) => p.rows);
    let ids: number[];
    try {
      const r = await this.pool.query<{ id: number }>(
        `INSERT INTO observations (received_at, token_hash, device_id, gps, cells, wifi)
         SELECT received_at, token_hash, device_id, gps, cells, wifi
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
           WITH ORDINALITY AS u (received_at, token_hash, device_id, gps, cells, wifi, ord)
         ORDER BY ord
         RETURNING id`,
        [
          rows.map((r) => r.received_at),
          rows.map((r) => r.token_hash),
          rows.map((r) => r.device_id),
          rows.map((r) => r.gps),
          rows.map((r) => r.cells),
          rows.map((r) => r.wifi),
        ],
      );
      ids = r.rows.map((row) => row.id);
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    let at = 0;
    for (const p of batch) {
      p.resolve(ids.slice(at, at + p.rows.length));
      at += p.rows.length;
    }
  }
}
