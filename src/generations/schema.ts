/**
 * The PostgreSQL schema of learning across servers (component `learning` of
 * `whereabouts_schema`; docs/deploy.md, "Learning across servers"):
 *
 * - `observations`: every server's GPS submissions, the columns of `observations.sqlite` plus
 *   `tx`, the inserting transaction. A learning round reads the rows of transactions older than
 *   every running one (`tx < pg_snapshot_xmin(...)`), in `(tx, id)` order after the last
 *   round's cursor: a sequence alone would skip a row whose transaction commits after a later
 *   id was read.
 * - `station_generations`: the published database generations, newest last; each names the
 *   publication it was built on (`base`), the submissions folded so far (`cursor_tx`,
 *   `cursor_id`) and its files (`files`: name, bytes, sha256).
 * - `station_generation_files`: those files in chunks.
 */
import pg from 'pg';
import { migrate, PG_TYPES } from '../pg/migrate.js';

/** Migrations, in order; the version is how many have been applied. Never edit one; append. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE observations (
     id bigserial PRIMARY KEY,
     tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
     received_at bigint NOT NULL,
     token_hash text NOT NULL,
     device_id text,
     gps text NOT NULL,
     cells text NOT NULL,
     wifi text NOT NULL
   );
   CREATE INDEX observations_tx ON observations (tx, id);
   CREATE INDEX observations_token ON observations (token_hash);
   CREATE TABLE station_generations (
     id bigserial PRIMARY KEY,
     base bigint,
     generation bigint NOT NULL,
     manifest text NOT NULL,
     files text NOT NULL,
     cursor_tx xid8 NOT NULL,
     cursor_id bigint NOT NULL,
     observations bigint NOT NULL,
     published_at bigint NOT NULL,
     publisher text NOT NULL
   );
   CREATE TABLE station_generation_files (
     generation_id bigint NOT NULL REFERENCES station_generations (id) ON DELETE CASCADE,
     name text NOT NULL,
     part integer NOT NULL,
     data bytea NOT NULL,
     PRIMARY KEY (generation_id, name, part)
   );`,
];

/** The learning schema version this build writes. */
export const PG_LEARNING_SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the learning schema up to date under the migration lock; refuses a newer one. */
export function migrateLearning(client: pg.ClientBase): Promise<number> {
  return migrate(client, 'learning', MIGRATIONS, 'learning');
}

/**
 * A pool on `url` whose database has the learning schema brought up to date; rejects (the pool
 * ended) when PostgreSQL cannot be reached or holds a newer schema. Broken idle connections
 * are dropped by the pool: the listener keeps their error from ending the process.
 */
export async function openLearningPool(
  url: string,
  options: { poolSize?: number; connectTimeoutMs?: number },
): Promise<{ pool: pg.Pool; config: pg.ClientConfig }> {
  const config: pg.ClientConfig = {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    types: PG_TYPES,
    application_name: 'whereabouts',
  };
  const pool = new pg.Pool({ ...config, max: options.poolSize ?? 2 });
  pool.on('error', () => {});
  try {
    const client = await pool.connect();
    try {
      await migrateLearning(client);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return { pool, config };
}
