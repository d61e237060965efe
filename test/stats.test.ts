import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers.js';
import { tempDir } from './temp-dirs.js';

/**
 * One LTE network (mcc 208, mnc 10) of three three-sector sites in a row 2 km apart, each
 * sector's estimate 300 m out from its mast, every range 600 m and 40 sightings.
 */
function siteRowCsv(): string {
  const rows = [
    'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
  ];
  const lat0 = 48.85;
  const mPerDegLat = 111_195;
  const mPerDegLon = mPerDegLat * Math.cos((lat0 * Math.PI) / 180);
  for (let site = 0; site < 3; site++) {
    const x0 = site * 2_000;
    for (let s = 0; s < 3; s++) {
      const az = (s * 2 * Math.PI) / 3;
      const x = x0 + 300 * Math.sin(az);
      const y = 300 * Math.cos(az);
      const lon = 2.35 + x / mPerDegLon;
      const lat = lat0 + y / mPerDegLat;
      const cid = ((100 + site) << 8) | (s + 1);
      rows.push(`LTE,208,10,7,${cid},0,${lon.toFixed(7)},${lat.toFixed(7)},600,40,1,1700000000,1700000000,0`);
    }
  }
  return `${rows.join('\n')}\n`;
}

/** A database imported from {@link siteRowCsv} in a fresh directory. */
function importedSites(): { dir: string; db: string } {
  const dir = tempDir('wb-stats-');
  const csv = join(dir, 'cells.csv');
  writeFileSync(csv, siteRowCsv());
  const db = join(dir, 'db');
  expect(cli(['import', '--quiet', '--db', db, csv]).code).toBe(0);
  return { dir, db };
}

describe('whereabouts stats', () => {
  it("prints each network's ranges, samples, site spacing and sector offset as the import measured them", () => {
    const { db } = importedSites();

    const json = cli(['stats', '--db', db, '--json']);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout);
    expect(stats.version).toBe(1);
    expect(stats.networks).toHaveLength(1);
    const [lte] = stats.networks;
    expect(lte).toMatchObject({ radio: 'lte', mcc: 208, mnc: 10, cells: 9, learned: 0, sites: 3 });
    // Quantiles come from bins 4.4% wide.
    expect(lte.range_m.p50 / 600).toBeCloseTo(1, 1);
    expect(lte.samples.p50 / 40).toBeCloseTo(1, 1);
    expect(lte.site_spacing_m.p50 / 2_000).toBeCloseTo(1, 1);
    expect(lte.sector_offset.p50 / 0.5).toBeCloseTo(1, 1);

    const text = cli(['stats', '--db', db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('network statistics (version 1), 1 networks');
    expect(text.stdout).toMatch(/lte 208 10 +9 +0 /);
    expect(stats.calibration).toBeNull();
    expect(text.stdout).toContain('no radius model (whereabouts calibrate)');
  });

  it('says so for a database written before the statistics, and needs --db', () => {
    const { dir, db } = importedSites();
    const manifestPath = join(db, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    delete manifest.network_stats;
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const r = cli(['stats', '--db', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('has no network statistics');
    // It still answers, with the solver's priors.
    const answer = cli(
      ['locate', '--db', db],
      JSON.stringify({
        token: 't',
        radio: 'lte',
        mcc: 208,
        mnc: 10,
        cells: [{ lac: 7, cid: (100 << 8) | 1 }],
      }),
    );
    expect(JSON.parse(answer.stdout)).toMatchObject({ status: 'ok' });

    expect(cli(['stats']).code).toBe(2);
    expect(cli(['stats', '--db', join(dir, 'missing')]).code).toBe(1);
  });
});
