/**
 * `whereabouts learn` through the real CLI, on the hand-made fixtures of the core's tests
 * (crates/whereabouts-core/tests/fixtures/learn): reports, usage errors, and a learned cell
 * answering `locate`.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { RadioCode } from '../src/locating/request/index.js';
import { ObservationStore } from '../src/observations/index.js';
import { cli, root } from './helpers.js';
import { tempDir } from './temp-dirs.js';

const fixtures = join(root, 'crates', 'whereabouts-core', 'tests', 'fixtures', 'learn');
const newDb = () => join(tempDir('wb-learn-'), 'db');

describe('whereabouts learn', () => {
  it('reads a G-NetTrack Pro log without --mcc/--mnc: each row names its network', () => {
    const db = newDb();
    const r = cli(['learn', '--quiet', '--db', db, join(fixtures, 'gnettrack-log.txt')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('gnettrack-log.txt: GNetTrackLog, 12 rows, 10 accepted, 2 rejected');
    // Yas's LTE cell (eNB 1059, sector 1: ECI 271105) and UMTS cell, expresso's LTE cell.
    expect(r.stderr).toContain('3 cells, 0 WiFi APs');
  });

  it('learns the three formats and reports each file', () => {
    const db = newDb();
    const files = ['opencellid.csv', 'gnettrack.csv', 'wigle.csv'].map((f) => join(fixtures, f));
    const r = cli(['learn', '--quiet', '--db', db, '--mcc', '272', '--mnc', '1', ...files]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('opencellid.csv: OpenCellIdMeasurements, 16 rows, 14 accepted, 2 rejected');
    expect(r.stderr).toContain('gnettrack.csv: GNetTrack, 16 rows, 14 accepted, 2 rejected');
    expect(r.stderr).toContain('wigle.csv: Wigle, 9 rows, 6 accepted, 1 rejected, 2 skipped');
    expect(r.stderr).toMatch(/line 16: /);
    expect(r.stderr).toContain('4 cells, 1 WiFi APs');
    // The counts: every accepted row (14 + 14 + 6) is an observation; 4 cells and 1 AP are new.
    expect(r.stderr).toContain(
      'learned from 34 observations (1 dropped as inconsistent): 5 stations added, 0 refined',
    );

    const res = cli(
      ['locate', '--db', db, '--no-land'],
      JSON.stringify({ cells: [{ radio: 'lte', mcc: 272, mnc: 1, lac: 100, cid: 128003 }] }),
    );
    expect(res.code, res.stderr).toBe(0);
    const body = JSON.parse(res.stdout) as { status: string; lat: number; lon: number };
    expect(body.status).toBe('ok');
    // Inside the fixture's 250 m ring, drawn toward its strong-signal (north-east)
    // side by the signal weight and the mode search (docs/learning.md): about 110 m.
    expect(body.lat).toBeGreaterThan(51.0);
    expect(body.lat - 51.0).toBeLessThan(0.0012);
    expect(Math.abs(body.lon + 1.0)).toBeLessThan(0.002);
  });

  it('learns from the GPS submissions the server stored (observations.sqlite)', async () => {
    const store = join(tempDir('wb-obs-'), 'store');
    mkdirSync(store);
    const obs = ObservationStore.open(store);
    // Three drives past LTE cell 262/3/7/500000 and two APs, a few metres apart; one
    // submission without a usable fix, which is reported.
    for (const [lat, lon, acc] of [
      [48.857, 2.352, 8],
      [48.8574, 2.3526, 12],
      [48.8566, 2.3514, 10],
    ] as const) {
      await obs.add({
        receivedAt: 1_790_000_000_000,
        token: 'test-token',
        gps: [
          { lat: lat + 0.01, lon, accuracy: 500 },
          { lat, lon, accuracy: acc },
        ],
        cells: [{ radio: RadioCode.lte, mcc: 262, mnc: 3, lac: 7, cid: 500000, signal: -80 }],
        wifi: [
          { bssid: 0x00_11_22_33_44_55, signal: -60 },
          { bssid: 0x00_11_22_33_44_66, signal: -65 },
        ],
      });
    }
    obs.close();
    // The store refuses a submission without a fix; a damaged table is what can hold one.
    const raw = new Database(join(store, 'observations.sqlite'));
    raw
      .prepare(
        "INSERT INTO observations (received_at, token_hash, device_id, gps, cells, wifi) VALUES (1, 'x', NULL, '[]', '[]', '[]')",
      )
      .run();
    raw.close();

    const db = newDb();
    const r = cli(['learn', '--quiet', '--db', db, join(store, 'observations.sqlite')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/observations\.sqlite: Submissions, 4 rows, 3 accepted, 1 rejected/);
    expect(r.stderr).toMatch(/line 4: no valid GPS fix/);
    expect(r.stderr).toContain('1 cells, 2 WiFi APs');

    const res = cli(
      ['locate', '--db', db, '--no-land'],
      JSON.stringify({ cells: [{ radio: 'lte', mcc: 262, mnc: 3, lac: 7, cid: 500000 }], address: 0 }),
    );
    const body = JSON.parse(res.stdout) as { status: string; lat: number; lon: number };
    expect(body.status).toBe('ok');
    // The most accurate fix of each submission counts, not the 500 m one 1.1 km north.
    expect(Math.abs(body.lat - 48.857)).toBeLessThan(0.001);
    expect(Math.abs(body.lon - 2.352)).toBeLessThan(0.001);
  });

  it('learns from standard input as FILE - (a gzipped file too)', () => {
    const db = newDb();
    const text = readFileSync(join(fixtures, 'opencellid.csv'));
    const r = cli(['learn', '--quiet', '--db', db, '-'], gzipSync(text));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('standard input: OpenCellIdMeasurements, 16 rows, 14 accepted, 2 rejected');
  });

  it('needs --mcc/--mnc for G-NetTrack exports, and flags used together', () => {
    const db = newDb();
    const r = cli(['learn', '--quiet', '--db', db, join(fixtures, 'gnettrack.csv')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--mcc');
    expect(cli(['learn', '--db', db, '--mcc', '272', join(fixtures, 'gnettrack.csv')]).code).toBe(2);
    expect(cli(['learn', '--db', db]).code).toBe(2);
    expect(cli(['learn', '--db', db, '--mcc', '1000', '--mnc', '1', join(fixtures, 'wigle.csv')]).code).toBe(
      2,
    );
  });
});
