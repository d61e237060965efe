/**
 * GPS submissions: stored durably (committed before add resolves), grouped under concurrency,
 * readable after reopening, and naming their token only by its hash; in SQLite and in
 * PostgreSQL alike (the PostgreSQL store needs a server: test/pg.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Observation,
  type ObservationStorage,
  ObservationStore,
  PgObservationStore,
  tokenHash,
} from '../src/observations/index.js';
import { freshDatabase } from './pg.js';
import { tempDir } from './temp-dirs.js';

const open: ObservationStorage[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** A store of each kind: a new place for it, opening it there, and reading one stored row back. */
interface Kind {
  name: string;
  place(): Promise<string>;
  open(where: string): Promise<ObservationStorage>;
  row(where: string, id: number): Promise<Record<string, unknown>>;
}

const KINDS: Kind[] = [
  {
    name: 'SQLite',
    place: async () => tempDir('wb-obs-'),
    open: async (dir) => ObservationStore.open(dir),
    row: async (dir, id) => {
      const db = new Database(join(dir, 'observations.sqlite'), { readonly: true });
      try {
        return db.prepare('SELECT * FROM observations WHERE id = ?').get(id) as Record<string, unknown>;
      } finally {
        db.close();
      }
    },
  },
  {
    name: 'PostgreSQL',
    place: freshDatabase,
    open: (url) => PgObservationStore.open(url),
    row: async (url, id) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const r = await client.query(
          'SELECT id::int AS id, received_at::float8 AS received_at, token_hash, device_id, gps, cells, wifi FROM observations WHERE id = $1',
          [id],
        );
        return r.rows[0] as Record<string, unknown>;
      } finally {
        await client.end();
      }
    },
  },
];

const token = 'QW5vdGhlclNlY3JldFRva2VuVmFsdWVGb3JUZXN0cw';

function observation(i: number): Observation {
  return {
    receivedAt: 1_780_000_000_000 + i,
    token,
    deviceId: `dev${i % 3}`,
    gps: [
      {
        lat: 52.52 + i / 1e5,
        lon: 13.405,
        accuracy: 8,
        heading: 90,
        timestamp: 1_780_000_000_000,
        source: 'gps',
      },
    ],
    cells: [{ radio: 3, mcc: 262, mnc: 2, lac: 801, cid: 20819 + i, signal: -90 }],
    wifi: [{ bssid: 0x0017c5cdcaaa, signal: -70 }],
  };
}

describe.each(KINDS)('observation store ($name)', (kind) => {
  const storeIn = async (where: string) => {
    const s = await kind.open(where);
    open.push(s);
    return s;
  };

  it('adds submissions, counts them and keeps them across reopening', async () => {
    const dir = await kind.place();
    const s = await storeIn(dir);
    expect(await s.count()).toBe(0);
    const first = await s.add(observation(0));
    const second = await s.add(observation(1));
    expect(second).toBeGreaterThan(first);
    expect(await s.count()).toBe(2);
    await s.close();
    const again = await storeIn(dir);
    expect(await again.count()).toBe(2);
    expect(await again.add(observation(2))).toBeGreaterThan(second);
  });

  it('groups concurrent submissions and stores each exactly once; a batch keeps its order', async () => {
    const s = await storeIn(await kind.place());
    const ids = await Promise.all(Array.from({ length: 500 }, (_, i) => s.add(observation(i))));
    expect(new Set(ids).size).toBe(500);
    expect(await s.count()).toBe(500);
    const batch = await s.addAll([observation(900), observation(901), observation(902)]);
    expect(batch).toHaveLength(3);
    expect([...batch].sort((a, b) => a - b)).toEqual(batch);
    expect(await s.count()).toBe(503);
  });

  it('stores the documented columns, with a hash in place of the token', async () => {
    const dir = await kind.place();
    const s = await storeIn(dir);
    const id = await s.add(observation(7));
    await s.close();
    const row = await kind.row(dir, id);
    expect(row).toEqual({
      id,
      received_at: 1_780_000_000_007,
      token_hash: tokenHash(token),
      device_id: 'dev1',
      gps: JSON.stringify(observation(7).gps),
      cells: JSON.stringify(observation(7).cells),
      wifi: JSON.stringify(observation(7).wifi),
    });
    expect(tokenHash(token)).toMatch(/^[0-9a-f]{64}$/);
    if (kind.name !== 'SQLite') return;
    for (const file of ['observations.sqlite', 'observations.sqlite-wal'])
      try {
        expect(readFileSync(join(dir, file)).includes(token)).toBe(false);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
  });

  it('refuses a submission without GPS fixes or with impossible coordinates', async () => {
    const s = await storeIn(await kind.place());
    await expect(s.add({ ...observation(0), gps: [] })).rejects.toThrow(/at least one GPS fix/);
    await expect(s.add({ ...observation(0), gps: [{ lat: 91, lon: 0 }] })).rejects.toThrow(/out of range/);
    await expect(s.add({ ...observation(0), gps: [{ lat: Number.NaN, lon: 0 }] })).rejects.toThrow(
      /out of range/,
    );
    await expect(s.addAll([observation(1), { ...observation(2), gps: [] }])).rejects.toThrow(/GPS fix/);
    expect(await s.count()).toBe(0);
  });
});
