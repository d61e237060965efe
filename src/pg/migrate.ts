/**
 * Versioned schema migrations of the PostgreSQL store (docs/deploy.md, "Schema and
 * migrations"), one component at a time (`tokens`, `learning`): each component's version is a
 * row of `whereabouts_schema`, migrations run under a session advisory lock so that servers
 * starting together migrate once, and a component migrated by a newer build is refused.
 */
import pg from 'pg';

/** The advisory lock key migrations run under: a fixed number of this project's own. */
const MIGRATION_LOCK = '8604003733432115808';

/** bigint columns as numbers: every stored value is a safe integer (the stores check on input). */
export const PG_TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * Brings `component` to version `migrations.length` under the advisory lock: each missing
 * migration in its own transaction, in order. Rejects when the database holds a newer version
 * than this build knows (`what` names the component in that message). Resolves to the version.
 */
export async function migrate(
  client: pg.ClientBase,
  component: string,
  migrations: readonly string[],
  what: string,
): Promise<number> {
  const known = migrations.length;
  await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK]);
  try {
    await client.query(
      'CREATE TABLE IF NOT EXISTS whereabouts_schema (component text PRIMARY KEY, version integer NOT NULL)',
    );
    const r = await client.query<{ version: number }>(
      'SELECT version FROM whereabouts_schema WHERE component = $1',
      [component],
    );
    const version = r.rows[0]?.version ?? 0;
    if (version > known)
      throw new Error(
        `the PostgreSQL store has ${what} schema version ${version}, newer than this build of whereabouts knows (${known}): a newer version migrated it; upgrade this server`,
      );
    for (let v = version; v < known; v++) {
      await client.query('BEGIN');
      try {
        await client.query(migrations[v] as string);
        await client.query(
          `INSERT INTO whereabouts_schema (component, version) VALUES ($1, $2)
           ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
          [component, v + 1],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    }
    return Math.max(version, known);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK]);
  }
}
