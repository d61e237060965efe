import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cli,
  importedSites,
  levelDriveCsv,
  MAST_WALK,
  mastWalkCsv,
  metresNearMastWalk,
  siteRowCsv,
} from './helpers.js';
import { tempDir } from './temp-dirs.js';

/** Metres from `answer` to the point `east`, `north` metres from the first mast of {@link siteRowCsv}. */
function metresFrom(answer: { lat: number; lon: number }, east: number, north: number): number {
  const mPerDegLat = 111_195;
  const mPerDegLon = mPerDegLat * Math.cos((48.85 * Math.PI) / 180);
  return Math.hypot((answer.lon - 2.35) * mPerDegLon - east, (answer.lat - 48.85) * mPerDegLat - north);
}

/** `whereabouts locate` on LTE 208/10 cell `cid` of TAC 7 alone (with advance `ta`), parsed. */
function locateLte(db: string, cid: number, ta?: number): { status: string; lat: number; lon: number } {
  const request = { token: 't', radio: 'lte', mcc: 208, mnc: 10, cells: [{ lac: 7, cid, ta }] };
  return JSON.parse(cli(['locate', '--db', db], JSON.stringify(request)).stdout);
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
    // Each sector held out lies 1.5 offsets (450 m) from its two siblings' mean.
    expect(lte.site_holdout_m / 450).toBeCloseTo(1, 1);
    expect(lte.site_holdouts).toBe(9);
    // Too few cells and sites for the solver to read anything of the network's own.
    expect(lte.read_as).toEqual({
      median_range_m: null,
      spacing_per_range: null,
      sector_offset: null,
      published_spacing_m: null,
      published_spacing_spread: null,
      uncounted: false,
      unranged: false,
      ids_name_sites: true,
      averaged_rows_published: false,
      exact_rows_published: false,
      site_holdout_m: null,
    });

    const text = cli(['stats', '--db', db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('network statistics (version 1), 1 networks');
    expect(text.stdout).toMatch(/lte 208 10 +9 +0 /);
    expect(text.stdout).toContain('read as');
    expect(stats.calibration).toBeNull();
    expect(text.stdout).toContain('no radius model (whereabouts calibrate)');
  });

  it("answers a cell the database lacks at its site's known sectors, once the network has enough sites", () => {
    const { db } = importedSites({ sites: 12 });
    const [lte] = JSON.parse(cli(['stats', '--db', db, '--json']).stdout).networks;
    expect(lte.read_as.site_holdout_m / 450).toBeCloseTo(1, 1);
    expect(cli(['stats', '--db', db]).stdout).toMatch(/ 4\d\d \(36\) /);
    // Sector 4 of the fourth site (eNB 103), unknown: at the mean of its three known sectors,
    // its mast, 6 km east of the first; a `lacf` answer.
    const request = (cid: number) =>
      JSON.stringify({ token: 't', radio: 'lte', mcc: 208, mnc: 10, cells: [{ lac: 7, cid }] });
    const answer = JSON.parse(cli(['locate', '--db', db], request((103 << 8) | 4)).stdout);
    expect(answer).toMatchObject({ status: 'ok', fallback: 'lacf', aged: true });
    expect(metresFrom(answer, 6_000, 0)).toBeLessThan(5);
    // No known sector of its site: the TAC area, centred on the row's middle.
    const area = JSON.parse(cli(['locate', '--db', db], request((140 << 8) | 1)).stdout);
    expect(area).toMatchObject({ status: 'ok', fallback: 'lacf' });
    expect(area.accuracy).toBeGreaterThan(answer.accuracy);
  });

  it('shows how the solver reads a network published at its masts, exported without sample counts', () => {
    const { db } = importedSites({ sites: 12, offset: 0, samples: '' });
    const stats = JSON.parse(cli(['stats', '--db', db, '--json']).stdout);
    const [lte] = stats.networks;
    expect(lte.cells).toBe(36);
    // Every sector on its mast: the masts' spacing stands for the ranges; no counts at all.
    expect(lte.read_as.published_spacing_m / 2_000).toBeCloseTo(1, 1);
    expect(lte.read_as).toMatchObject({ spacing_per_range: null, uncounted: true, unranged: true });
    const text = cli(['stats', '--db', db]).stdout;
    expect(lte.read_as.published_spacing_spread).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(
      /published masts, \d+ m apart \(median over 10% quantile \d+\.\d\d\); no sample counts; no ranges/,
    );
  });

  it.each([
    ['as averages', false],
    ['marked exact (changeable 0)', true],
  ])(
    'reads a network whose cells share their positions as published masts, whatever their ids: rows %s',
    (_, exact) => {
      // GSM cells 1..36 on 12 masts: their last digits group no site.
      const { db } = importedSites({ sites: 12, offset: 0, gsm: true, exact });
      const [gsm] = JSON.parse(cli(['stats', '--db', db, '--json']).stdout).networks;
      expect(gsm).toMatchObject({
        radio: 'gsm',
        cells: 36,
        learned: exact ? 36 : 0,
        colocated: exact ? 0 : 36,
        colocated_learned: exact ? 36 : 0,
      });
      expect(gsm.position_spacing_m.p50 / 2_000).toBeCloseTo(1, 1);
      expect(gsm.read_as.published_spacing_m / 2_000).toBeCloseTo(1, 1);
      expect(gsm.read_as).toMatchObject({ exact_rows_published: exact, averaged_rows_published: !exact });
      expect(cli(['stats', '--db', db]).stdout).toMatch(/gsm 208 10 .* 36 .*published masts.*, \d+ m apart/);
      // Cell 5 (the second mast) serving with an advance of 2: at its mast, the radius the
      // advance's distance (GSM steps of 553.5 m; the step's middle).
      const request = { token: 't', radio: 'gsm', mcc: 208, mnc: 10, cells: [{ lac: 7, cid: 5, ta: 2 }] };
      const answer = JSON.parse(cli(['locate', '--db', db], JSON.stringify(request)).stdout);
      expect(answer.status).toBe('ok');
      const mPerDegLon = 111_195 * Math.cos((48.85 * Math.PI) / 180);
      expect(Math.abs((answer.lon - 2.35) * mPerDegLon - 2_000)).toBeLessThan(2);
      expect(Math.abs(answer.lat - 48.85) * 111_195).toBeLessThan(2);
      expect(answer.accuracy).toBeGreaterThan(1_300);
      expect(answer.accuracy).toBeLessThan(1_450);
    },
  );

  it("reads a publisher's exact rows as masts and the crowd's rows beside them as a crowd's", () => {
    const crowd = siteRowCsv();
    const towers = siteRowCsv({ sites: 12, offset: 0, exact: true, firstEnb: 200, east: 50_000 });
    const dir = tempDir('wb-stats-mixed-');
    const csv = join(dir, 'cells.csv');
    writeFileSync(csv, `${crowd}${towers.split('\n').slice(1).join('\n')}`);
    const db = join(dir, 'db');
    expect(cli(['import', '--quiet', '--db', db, csv]).code).toBe(0);
    const [lte] = JSON.parse(cli(['stats', '--db', db, '--json']).stdout).networks;
    expect(lte).toMatchObject({ cells: 45, learned: 36, colocated_learned: 36 });
    expect(lte.read_as).toMatchObject({ exact_rows_published: true, averaged_rows_published: false });
    // A crowd cell answers as it does without the publisher's rows beside it.
    const { db: crowdOnly } = importedSites();
    for (const cid of [(100 << 8) | 1, (101 << 8) | 2]) {
      for (const ta of [undefined, 3]) expect(locateLte(db, cid, ta)).toEqual(locateLte(crowdOnly, cid, ta));
    }
    // A tower's cell answers at its mast.
    const tower = locateLte(db, (205 << 8) | 2, 3);
    const mPerDegLon = 111_195 * Math.cos((48.85 * Math.PI) / 180);
    expect(Math.abs((tower.lon - 2.35) * mPerDegLon - 60_000)).toBeLessThan(2);
  });

  it('reads a GSM crowd whose ids are numbered 1, 2, 3... as one without sites by id', () => {
    // 70 three-sector sites, each sector 300 m out from its mast: a decade of ids holds
    // parts of four masts, no tighter than decades shifted.
    const { db } = importedSites({ sites: 70, gsm: true });
    const [gsm] = JSON.parse(cli(['stats', '--db', db, '--json']).stdout).networks;
    expect(gsm.id_site_contrast).toBeGreaterThan(0.7);
    expect(gsm.id_site_contrast).toBeLessThan(1.25);
    expect(gsm.read_as).toMatchObject({
      ids_name_sites: false,
      spacing_per_range: null,
      sector_offset: null,
    });
    expect(cli(['stats', '--db', db]).stdout).toMatch(/ids name no sites/);
    // Its cells answer at their own estimates (no sector axis).
    const request = { token: 't', radio: 'gsm', mcc: 208, mnc: 10, cells: [{ lac: 7, cid: 5, signal: -60 }] };
    const answer = JSON.parse(cli(['locate', '--db', db], JSON.stringify(request)).stdout);
    const row = siteRowCsv({ sites: 70, gsm: true }).split('\n')[5]?.split(',') ?? [];
    expect(answer.lat).toBeCloseTo(Number(row[7]), 5);
    expect(answer.lon).toBeCloseTo(Number(row[6]), 5);
  });

  it('counts the cells learn placed by timing advance, and shows their points', () => {
    // Driven on three days, with the advances of a mast 100 m off the road's west end.
    const dir = tempDir('wb-stats-advances-');
    const csv = join(dir, 'drive.csv');
    const cell = (302 << 8) | 1;
    writeFileSync(csv, levelDriveCsv(cell, { east: -1100, north: -100 }));
    const db = join(dir, 'db');
    const learned = cli(['learn', '--db', db, '--no-calibrate', csv]);
    expect(learned.code).toBe(0);
    expect(learned.stderr).toContain('1 cells placed by level, 1 by timing advance');
    const [lte] = JSON.parse(cli(['stats', '--db', db, '--json']).stdout).networks;
    const [advances] = lte.advances;
    expect(advances.points.split(';').length).toBeGreaterThan(10);
    expect(advances.points).toMatch(/^\d+\/-?\d+\.\d{7}\/-?\d+\.\d{7}\/\d+(;|$)/);
    expect(cli(['stats', '--db', db]).stdout).toMatch(
      /cells by advance {2}read as\n.*lte 208 10 .* 1 +1 +1 +as stored\n/s,
    );
  });

  it('shows the site masts learn fitted from timing advances, and locate puts a serving cell on its ring', () => {
    const dir = tempDir('wb-stats-masts-');
    const csv = join(dir, 'walk.csv');
    writeFileSync(csv, mastWalkCsv());
    const db = join(dir, 'db');
    const learned = cli(['learn', '--db', db, '--no-calibrate', csv]);
    expect(learned.code).toBe(0);
    expect(learned.stderr).toContain('1 site masts from timing advances');

    const stats = JSON.parse(cli(['stats', '--db', db, '--json']).stdout);
    const [mast] = stats.networks[0].masts;
    // Changed on the day of its newest sighting (2023-11-14).
    expect(mast).toMatchObject({ site: MAST_WALK.site, sightings: 40, updated: 1_699_920_000 });
    expect(metresNearMastWalk(mast, MAST_WALK.lat, MAST_WALK.lon)).toBeLessThan(40);
    expect(cli(['stats', '--db', db]).stdout).toMatch(
      /learned masts {2}cells by level {2}cells by advance {2}read as\n.*lte 208 10 .* 1 +\d+ +\d+ +as stored\n/s,
    );

    // Sector 1 serving with advance 10 (781-859 m; a step either way, 703-937 m): on the
    // line from the mast through its learned position, at the ring's inner edge.
    const plain = locateLte(db, (300 << 8) | 1);
    const ringed = locateLte(db, (300 << 8) | 1, 10);
    const fromMast = (a: { lat: number; lon: number }) => metresNearMastWalk(a, mast.lat, mast.lon);
    expect(fromMast(plain)).toBeLessThan(400);
    expect(Math.abs(fromMast(ringed) - 9 * 78.12)).toBeLessThan(3);
  });

  it('stops quietly when its reader closes the pipe early', () => {
    const { db } = importedSites();
    const bin = join(import.meta.dirname, '..', 'bin', 'whereabouts.js');
    // Without the handler the second write fails with EPIPE and a stack trace on stderr.
    const r = spawnSync(
      'sh',
      ['-c', `"${process.execPath}" "${bin}" stats --db "${db}" | head -c 1 >/dev/null`],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
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
    expect(locateLte(db, (100 << 8) | 1)).toMatchObject({ status: 'ok' });

    expect(cli(['stats']).code).toBe(2);
    expect(cli(['stats', '--db', join(dir, 'missing')]).code).toBe(1);
  });
});
