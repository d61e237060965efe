/**
 * GPS-tagged observations submitted with `/process` requests (spec 2.5, `gps_sandbox: 0`),
 * kept in `DIR/observations.sqlite` for the learning pipeline. One row per submission; the
 * schema is documented in docs/tokens.md, which is the contract with the pipeline.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { GpsObservation } from '../locating/request/index.js';
import { preparePrivateDatabase } from '../private-file.js';
import { GroupCommit } from '../tokens/group-commit.js';

/** A submission: the GPS fixes with the radio environment seen at the same place. */
export interface Observation {
  /** ms since the epoch, when the server received it. */
  receivedAt: number;
  /** The submitting token; the store keeps only {@link tokenHash} of it, never the token. */
  token: string;
  deviceId?: string;
  /** The normalised request's GPS fixes. */
  gps: GpsObservation[];
  /** The normalised request's cells (src/request.ts CellObservation). */
  cells: unknown[];
  /** The normalised request's access points (src/request.ts WifiObservation; BSSIDs as 48-bit integers). */
  wifi: unknown[];
}

/**
 * The form in which observations name their token: hex SHA-256. Tokens are 256 random bits,
 * so the hash cannot be turned back into a usable token, yet it still groups a token's data
 * (and lets the pipeline drop a token's submissions if it turns out to be abused).
 */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

const SCHEMA_VERSION = 1;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS observations (
  id INTEGER PRIMARY KEY,
  received_at INTEGER NOT NULL,
  token_hash TEXT NOT NULL,
  device_id TEXT,
  gps TEXT NOT NULL,
  cells TEXT NOT NULL,
  wifi TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS observations_received_at ON observations (received_at);
`;

/** A submission as stored: the columns of the `observations` table (SQLite and PostgreSQL alike). */
export interface ObservationRow {
  received_at: number;
  token_hash: string;
  device_id: string | null;
  gps: string;
  cells: string;
  wifi: string;
}

/**
 * Submissions as rows; throws a RangeError for a submission without GPS fixes or with a fix
 * whose lat/lon are not finite WGS84 degrees. The server validates first; this keeps the
 * learning pipeline's input clean even if a caller does not.
 */
export function observationRows(observations: readonly Observation[]): ObservationRow[] {
  const rows: ObservationRow[] = [];
  for (const o of observations) {
    if (!Array.isArray(o.gps) || o.gps.length === 0)
      throw new RangeError('an observation needs at least one GPS fix');
    for (const g of o.gps)
      if (!(Math.abs(g.lat) <= 90 && Math.abs(g.lon) <= 180))
        throw new RangeError(`GPS fix out of range: ${g.lat}, ${g.lon}`);
    rows.push({
      received_at: Math.round(o.receivedAt),
      token_hash: tokenHash(o.token),
      device_id: o.deviceId ?? null,
      gps: JSON.stringify(o.gps),
      cells: JSON.stringify(o.cells ?? []),
      wifi: JSON.stringify(o.wifi ?? []),
    });
  }
  return rows;
}

/**
 * Where GPS submissions are kept: {@link ObservationStore} (SQLite, `DIR/observations.sqlite`)
 * or `PgObservationStore` (PostgreSQL, shared by several servers; docs/deploy.md). `add` and
 * `addAll` resolve once the rows are committed.
 */
export interface ObservationStorage {
  add(o: Observation): Promise<number>;
  addAll(observations: readonly Observation[]): Promise<number[]>;
  count(): number | Promise<number>;
  close(): void | Promise<void>;
}

/** Options of {@link ObservationStore.open}. */
export interface ObservationStoreOptions {
  /** As for tokens: FULL (default) fsyncs each group commit; NORMAL survives `kill -9` but not a machine crash. */
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a commit waits for another process's write lock (default 5000 ms). */
  busyTimeoutMs?: number;
}

/** Durable, append-only store of GPS submissions; see the module comment. */
export class ObservationStore implements ObservationStorage {
  /** Each item is one submission's rows, inserted in one transaction (a group holds several). */
  private readonly commits: GroupCommit<ObservationRow[], number[]>;
  private readonly countStmt;

  private constructor(private readonly db: Database.Database) {
    const insert = db.prepare<ObservationRow>(
      `INSERT INTO observations (received_at, token_hash, device_id, gps, cells, wifi)
       VALUES (@received_at, @token_hash, @device_id, @gps, @cells, @wifi)`,
    );
    this.countStmt = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM observations');
    this.commits = new GroupCommit<ObservationRow[], number[]>(db, (groups) =>
      groups.map((rows) => rows.map((r) => Number(insert.run(r).lastInsertRowid))),
    );
  }

  /** Opens (creating if needed) DIR/observations.sqlite in WAL mode; several processes may share it. */
  static open(dbDir: string, options: ObservationStoreOptions = {}): ObservationStore {
    mkdirSync(dbDir, { recursive: true });
    const file = join(dbDir, 'observations.sqlite');
    // Token hashes, device ids and GPS tracks: readable by the owner only.
    preparePrivateDatabase(file);
    const db = new Database(file);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION)
      throw new Error(
        `observations.sqlite has schema version ${version}; this build knows up to ${SCHEMA_VERSION}`,
      );
    if (version < SCHEMA_VERSION)
      db.transaction(() => {
        db.exec(SCHEMA);
        db.pragma(`user_version = ${SCHEMA_VERSION}`);
      }).immediate();
    return new ObservationStore(db);
  }

  /**
   * Stores one submission; resolves with its row id once it is committed (durable), grouped
   * with other submissions of the moment into one transaction. Rejects a submission without
   * GPS fixes or with a fix whose lat/lon are not finite WGS84 degrees: the server validates
   * first, and this keeps the learning pipeline's input clean even if a caller does not.
   */
  add(o: Observation): Promise<number> {
    return this.addAll([o]).then((ids) => ids[0] as number);
  }

  /**
   * Stores several submissions in one transaction: all are committed or none (a `/v2/geosubmit`
   * batch). Resolves with their row ids, in order; rejects, storing nothing, when any of them
   * fails {@link ObservationStore.add}'s checks.
   */
  addAll(observations: readonly Observation[]): Promise<number[]> {
    let rows: ObservationRow[];
    try {
      rows = observationRows(observations);
    } catch (err) {
      return Promise.reject(err);
    }
    if (rows.length === 0) return Promise.resolve([]);
    return this.commits.submit(rows);
  }

  /** Number of stored submissions (committed ones, as any reader sees them). */
  count(): number {
    return this.countStmt.get()?.n ?? 0;
  }

  /** Commits what is queued and closes the database. */
  close(): void {
    if (!this.db.open) return;
    this.commits.close();
    this.db.close();
  }
}
