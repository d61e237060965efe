/**
 * `whereabouts learn` through the real CLI, on the hand-made fixtures of the core's tests
 * (crates/whereabouts-core/tests/fixtures/learn): reports, usage errors, and a learned cell
 * answering `locate`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, root } from './helpers.js';

const fixtures = join(root, 'crates', 'whereabouts-core', 'tests', 'fixtures', 'learn');
const newDb = () => join(mkdtempSync(join(tmpdir(), 'wb-learn-')), 'db');

describe('whereabouts learn', () => {
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

    const res = cli(
      ['locate', '--db', db, '--no-land'],
      JSON.stringify({ cells: [{ radio: 'lte', mcc: 272, mnc: 1, lac: 100, cid: 128003 }] }),
    );
    expect(res.code, res.stderr).toBe(0);
    const body = JSON.parse(res.stdout) as { status: string; lat: number; lon: number };
    expect(body.status).toBe('ok');
    expect(Math.abs(body.lat - 51.0)).toBeLessThan(0.001);
    expect(Math.abs(body.lon + 1.0)).toBeLessThan(0.001);
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
