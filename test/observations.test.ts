/**
 * GPS submissions: stored durably (committed before add resolves), grouped under concurrency,
 * readable after reopening, and naming their token only by its hash.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type Observation, ObservationStore, tokenHash } from '../src/observations/index.js';
import { tempDir } from './temp-dirs.js';

const open: ObservationStore[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function storeIn(dir: string): ObservationStore {
  const s = ObservationStore.open(dir);
  open.push(s);
  return s;
}

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

describe('ObservationStore', () => {
  it('adds submissions, counts them and keeps them across reopening', async () => {
    const dir = tempDir('wb-obs-');
    const s = storeIn(dir);
    expect(s.count()).toBe(0);
    const first = await s.add(observation(0));
    const second = await s.add(observation(1));
    expect(second).toBeGreaterThan(first);
    expect(s.count()).toBe(2);
    s.close();
    const again = storeIn(dir);
    expect(again.count()).toBe(2);
    expect(await again.add(observation(2))).toBeGreaterThan(second);
  });

  it('groups concurrent submissions and stores each exactly once', async () => {
    const dir = tempDir('wb-obs-');
    const s = storeIn(dir);
    const ids = await Promise.all(Array.from({ length: 500 }, (_, i) => s.add(observation(i))));
    expect(new Set(ids).size).toBe(500);
    expect(s.count()).toBe(500);
  });

  it('stores the documented columns, with a hash in place of the token', async () => {
    const dir = tempDir('wb-obs-');
    const s = storeIn(dir);
    const id = await s.add(observation(7));
    s.close();
    const db = new Database(join(dir, 'observations.sqlite'), { readonly: true });
    const row = db.prepare('SELECT * FROM observations WHERE id = ?').get(id) as Record<string, unknown>;
    db.close();
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
    for (const file of ['observations.sqlite', 'observations.sqlite-wal'])
      try {
        expect(readFileSync(join(dir, file)).includes(token)).toBe(false);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
  });

  it('refuses a submission without GPS fixes or with impossible coordinates', async () => {
    const s = storeIn(tempDir('wb-obs-'));
    await expect(s.add({ ...observation(0), gps: [] })).rejects.toThrow(/at least one GPS fix/);
    await expect(s.add({ ...observation(0), gps: [{ lat: 91, lon: 0 }] })).rejects.toThrow(/out of range/);
    await expect(s.add({ ...observation(0), gps: [{ lat: Number.NaN, lon: 0 }] })).rejects.toThrow(
      /out of range/,
    );
    expect(s.count()).toBe(0);
  });
});
