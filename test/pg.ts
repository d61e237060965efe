/**
 * PostgreSQL for tests: the server of WHEREABOUTS_TEST_PG_URL (test/pg-global-setup.ts), and a
 * new database per use, dropped when the test file ends.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';

const made: string[] = [];

afterAll(async () => {
  if (made.length === 0) return;
  const admin = new pg.Client({ connectionString: pgUrl() });
  await admin.connect();
  try {
    for (const name of made.splice(0)) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
});

/** The test server's URL; throws (failing the test) with what to do when there is none. */
export function pgUrl(): string {
  const url = process.env.WHEREABOUTS_TEST_PG_URL;
  if (!url)
    throw new Error(
      'the PostgreSQL tests need a server: WHEREABOUTS_TEST_PG_URL is not set' +
        (process.env.WHEREABOUTS_TEST_PG_PROBLEM ? ` and ${process.env.WHEREABOUTS_TEST_PG_PROBLEM}` : '') +
        '. Install PostgreSQL (Debian: apt-get install -y postgresql) so that test/pg-global-setup.ts can start ' +
        'a throwaway cluster, or set WHEREABOUTS_TEST_PG_URL=postgres://... (a server where the user may CREATE DATABASE)',
    );
  return url;
}

/** The URL of a new, empty database on the test server. */
export async function freshDatabase(): Promise<string> {
  const base = pgUrl();
  const name = `wbt_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  made.push(name);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}
