/**
 * `whereabouts eval`: the metrics against hand-computed values, the split (no row a fold tests
 * reaches its learning side), malformed lines, and the report's SVGs. Every input is generated
 * here; nothing reads ../shared or the network.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ObservationGroup, withCellLevelOffset, withoutLevels } from '../src/eval/inputs.js';
import {
  distanceM,
  insideBadness,
  outsideBand,
  pairedRatio,
  ratioBadness,
  summarise,
  worldSpread,
} from '../src/eval/metrics.js';
import { worldsSvg } from '../src/eval/report.js';
import { assignFolds, learnPlan, parseSplit } from '../src/eval/split.js';
import type { EvalJson } from '../src/eval/table.js';
import { cli, fixtureDb, importedSites } from './helpers.js';
import { tempDir } from './temp-dirs.js';

describe('metrics', () => {
  it('takes nearest-rank quantiles and the inside share by hand', () => {
    const errors = [100, 10, 90, 20, 80, 30, 70, 40, 60, 50];
    const radii = [50, 50, 50, 50, 50, 50, 50, 50, 50, 50];
    const s = summarise(12, errors, radii);
    // Sorted 10..100: rank ceil(q * 10) -> median 5th = 50, p68 7th = 70, p90 9th, p95 10th.
    expect(s).toEqual({
      count: 12,
      answered: 10,
      answeredShare: 10 / 12,
      median: 50,
      p68: 70,
      p90: 90,
      p95: 100,
      max: 100,
      inside: 0.5, // 10, 20, 30, 40 and 50 are within 50 m (error <= radius)
    });
    expect(summarise(3, []).median).toBeNaN();
  });

  it('pairs the rows both answered before taking the ratio of medians', () => {
    // Paired: ours 10, 20 (median 10, rank 1 of 2), baseline 20, 60 (median 20).
    expect(pairedRatio([10, 20, Number.NaN, 40], [20, 60, 5, Number.NaN])).toBe(2);
  });

  it('measures great-circle distances', () => {
    expect(distanceM(52, 13, 52.001, 13)).toBeCloseTo(111.195, 2);
  });
  it('names the median world and the worst: the lowest ratio, the share farthest outside 60-76%', () => {
    const worlds = [
      { seed: 1, ratio: 1.2, inside: 0.7 },
      { seed: 2, ratio: 0.9, inside: 0.59 },
      { seed: 3, ratio: Number.NaN, inside: 0.8 },
      { seed: 4, ratio: 1.1, inside: 0.66 },
    ];
    const ratio = worldSpread(worlds, (w) => w.ratio, ratioBadness);
    // NaN (a world that answered nothing) is the worst; the median is of the others.
    expect(ratio).toMatchObject({ median: 1.1, worstSeed: 3, min: 0.9, max: 1.2 });
    const inside = worldSpread(worlds, (w) => w.inside, insideBadness);
    // 80% is 4 points outside the band, 59% one: 80% is the worst.
    expect(inside).toMatchObject({ worst: 0.8, worstSeed: 3, min: 0.59, max: 0.8 });
    // Inside the band, the farther from 68% the worse; any share outside is worse still.
    expect(insideBadness(0.61)).toBeGreaterThan(insideBadness(0.7));
    expect(insideBadness(0.59)).toBeGreaterThan(insideBadness(0.61));
    expect(outsideBand(0.68)).toBe(0);
  });
});

function group(file: number, first: number, time: number): ObservationGroup {
  return {
    file,
    first,
    end: first + 1,
    time,
    row: { request: {}, truth: { lat: 0, lon: 0 }, scenario: 's' },
  };
}

/** Every line a fold tests is either in a file it does not learn or held out of that file. */
function expectNoLeak(groups: ObservationGroup[], lines: Float64Array[], split: string): void {
  const folds = assignFolds(groups, lines.length, parseSplit(split));
  for (let k = 0; k < folds.count; k++) {
    const plan = learnPlan(groups, lines, folds, k);
    groups.forEach((g, i) => {
      if (folds.fold[i] !== k) return;
      const at = plan.files.indexOf(g.file);
      if (at < 0) return;
      for (let r = g.first; r < g.end; r++) expect(plan.heldOut[at]).toContain(lines[g.file]?.[r]);
    });
    // and nothing else is held out
    const tested = groups.filter((_, i) => folds.fold[i] === k).length;
    expect(plan.heldOut.reduce((n, h) => n + h.length, 0)).toBeLessThanOrEqual(tested);
  }
}

describe('split', () => {
  // Five files of four rows each, line numbers 2..5, times interleaved across files.
  const groups: ObservationGroup[] = [];
  for (let f = 0; f < 5; f++) for (let r = 0; r < 4; r++) groups.push(group(f, r, r * 10 + f));
  const lines = [0, 1, 2, 3, 4].map(() => Float64Array.from([2, 3, 4, 5]));

  it('files: every fourth file is tested, and none of its rows is learned', () => {
    const folds = assignFolds(groups, 5, parseSplit('files'));
    expect([...folds.fold]).toEqual(groups.map((g) => (g.file === 3 ? 0 : -1)));
    const plan = learnPlan(groups, lines, folds, 0);
    expect(plan.files).toEqual([0, 1, 2, 4]);
    expect(plan.heldOut).toEqual([[], [], [], []]);
  });

  it('time: the last quarter by time is tested and held out of learning', () => {
    const folds = assignFolds(groups, 5, parseSplit('time'));
    const tested = groups.filter((_, i) => folds.fold[i] === 0).map((g) => g.time);
    expect(tested.sort((a, b) => a - b)).toEqual([30, 31, 32, 33, 34]);
    const plan = learnPlan(groups, lines, folds, 0);
    expect(plan.heldOut).toEqual([[5], [5], [5], [5], [5]]);
    expectNoLeak(groups, lines, 'time');
  });

  it('kfold: every row tested exactly once, never learned by its own fold', () => {
    const folds = assignFolds(groups, 5, parseSplit('kfold:4'));
    expect(folds.count).toBe(4);
    expect([0, 1, 2, 3].map((k) => [...folds.fold].filter((f) => f === k).length)).toEqual([5, 5, 5, 5]);
    expectNoLeak(groups, lines, 'kfold:4');
    expectNoLeak(groups, lines, 'files');
  });

  it('refuses unknown splits', () => {
    expect(() => parseSplit('kfold:1')).toThrow(/kfold:K/);
    expect(() => parseSplit('random')).toThrow(/files, time or kfold/);
  });
});

const OCID_HEADER =
  'mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid';

describe('whereabouts eval', () => {
  it('scores labelled rows, skips malformed lines with their numbers, writes JSON and a report', () => {
    const db = fixtureDb();
    const dir = tempDir('wb-eval-');
    const cell = { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 };
    // The truth 0.001 degree north of cell 1 (52.5, 13.4): 111.2 m from its position.
    const rows = [
      JSON.stringify({ request: { cells: [cell] }, truth: { lat: 52.501, lon: 13.4 }, scenario: 'near' }),
      '{not json',
      JSON.stringify({ request: { cells: [cell] }, truth: { lat: 'x', lon: 13.4 } }),
      JSON.stringify({
        request: { cells: [{ ...cell, cid: 99 }] },
        truth: { lat: 52.5, lon: 13.4 },
        scenario: 'near',
      }),
    ];
    writeFileSync(join(dir, 'rows.jsonl'), `${rows.join('\n')}\n`);
    const report = join(dir, 'report.html');
    const r = cli(['eval', '--db', db, '--json', '--report', report, join(dir, 'rows.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/rows\.jsonl: line 2: not JSON/);
    expect(r.stderr).toMatch(/rows\.jsonl: line 3: "truth" needs numeric lat/);
    const json = JSON.parse(r.stdout) as EvalJson;
    expect(json.rows).toBe(2);
    expect(json.malformed).toBe(2);
    const all = json.table.find((l) => l.scenario === 'near' && l.by === 'all');
    expect(all?.ours.count).toBe(2);
    expect(all?.baselines.serving?.answeredShare).toBe(0.5);
    expect(all?.baselines.serving?.median).toBeCloseTo(111.19, 1);
    expect(all?.baselines.wmean?.median).toBeCloseTo(111.19, 1);
    // The unknown cell 99 is answered by its LAC's area, which the area baseline repeats.
    expect(all?.baselines.area).toMatchObject({ answeredShare: 0.5, ratio: 1 });

    const html = readFileSync(report, 'utf8');
    const svgs = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
    expect(svgs.length).toBe(4); // the map, then a CDF, calibration and histogram for the one scenario
    for (const svg of svgs) expect(wellFormed(svg)).toBe('');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);

    // The same run twice gives the same bytes; --compare lines them up.
    writeFileSync(join(dir, 'a.json'), r.stdout);
    const again = cli(['eval', '--db', db, '--json', '--quiet', join(dir, 'rows.jsonl')]);
    expect(again.stdout).toBe(r.stdout);
    const cmp = cli(['eval', '--compare', join(dir, 'a.json'), join(dir, 'a.json')]);
    expect(cmp.code, cmp.stderr).toBe(0);
    expect(cmp.stdout).toMatch(/near\s+all\s+2\s/);
  });

  it('measures a row answered through the LAC/TAC fallback against the area that request gets with lacf 2', () => {
    // Twelve three-sector LTE sites in a row 2 km apart (TAC 7); sector 4 of the fourth
    // (eNB 103, 6 km east of the first) is unknown: its site's sectors answer, at the mast.
    const { db } = importedSites({ sites: 12 });
    const dir = tempDir('wb-eval-');
    const mPerDegLon = 111_195 * Math.cos((48.85 * Math.PI) / 180);
    const row = (cid: number, east: number, fallbacks?: unknown) =>
      JSON.stringify({
        request: { radio: 'lte', mcc: 208, mnc: 10, cells: [{ lac: 7, cid }], fallbacks },
        truth: { lat: 48.85 + 300 / 111_195, lon: 2.35 + east / mPerDegLon },
        scenario: 'sector',
      });
    // The same request with fallbacks as a list of names, and a known sector (no fallback).
    const rows = [
      row((103 << 8) | 4, 6_000),
      row((103 << 8) | 4, 6_000, ['lacf']),
      row((101 << 8) | 1, 2_000),
    ];
    writeFileSync(join(dir, 'rows.jsonl'), `${rows.join('\n')}\n`);
    const r = cli(['eval', '--db', db, '--json', '--quiet', join(dir, 'rows.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    const table = (JSON.parse(r.stdout) as EvalJson).table;
    const site = table.find((l) => l.by === 'fallback' && l.value === 'lacf');
    const known = table.find((l) => l.by === 'fallback' && l.value === 'none');
    expect(site?.ours.count).toBe(2);
    // 300 m from the mast; the area's centre is the row's middle, 5 km west of it.
    expect(site?.ours.median).toBeLessThan(400);
    expect(site?.baselines.area).toMatchObject({ answeredShare: 1 });
    expect(site?.baselines.area?.median).toBeGreaterThan(4_000);
    expect(site?.baselines.area?.ratio).toBeGreaterThan(10);
    expect(known?.baselines.area?.answeredShare).toBe(0);
  });

  it('--family needs --sim (a family world is a simulator world)', () => {
    const r = cli(['eval', '--family', '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--family .*--sim/);
  });

  it("scores another system's answers by the same rules", () => {
    const db = fixtureDb();
    const dir = tempDir('wb-eval-');
    const cell = { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 };
    const row = (lat: number) => JSON.stringify({ request: { cells: [cell] }, truth: { lat, lon: 13.4 } });
    writeFileSync(join(dir, 'rows.jsonl'), `${row(52.501)}\n${row(52.502)}\n`);
    writeFileSync(
      join(dir, 'answers.jsonl'),
      '{"status":"ok","lat":52.501,"lon":13.4,"accuracy":10}\n{"status":"error","message":"No matches found"}\n',
    );
    const r = cli([
      'eval',
      '--db',
      db,
      '--json',
      '--answers',
      join(dir, 'answers.jsonl'),
      join(dir, 'rows.jsonl'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    const all = (JSON.parse(r.stdout) as EvalJson).table[0];
    expect(all?.ours).toMatchObject({ count: 2, answered: 1, median: 0, inside: 1 });
  });

  it('splits each scenario by whether the serving cell reported a timing advance', () => {
    const db = fixtureDb();
    const dir = tempDir('wb-eval-advance-');
    const cell = { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 };
    const row = (lat: number, extra: object) =>
      JSON.stringify({ request: { cells: [{ ...cell, ...extra }] }, truth: { lat, lon: 13.4 } });
    const wifi = JSON.stringify({
      request: { wifi: [{ bssid: '00:11:22:33:44:55' }, { bssid: '00:11:22:33:44:56' }] },
      truth: { lat: 52.5, lon: 13.4 },
    });
    writeFileSync(
      join(dir, 'rows.jsonl'),
      `${row(52.501, { ta: 3 })}\n${row(52.502, { ta: 0 })}\n${row(52.503, {})}\n${wifi}\n`,
    );
    const r = cli(['eval', '--db', db, '--json', join(dir, 'rows.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    const lines = (JSON.parse(r.stdout) as EvalJson).table.filter((l) => l.by === 'advance');
    expect(Object.fromEntries(lines.map((l) => [l.value, l.ours.count]))).toEqual({
      reported: 2,
      none: 1,
      'no cell': 1,
    });
  });

  /**
   * `whereabouts eval --db FIXTURE FLAGS ROWS` on one row of `cells`: its exit and the request
   * it wrote (`--requests-out`), and a runner of the same rows with other flags.
   */
  function evalOneRow(cells: unknown[], flags: string[]) {
    const db = fixtureDb();
    const dir = tempDir('wb-eval-device-');
    const rows = join(dir, 'rows.jsonl');
    writeFileSync(rows, `${JSON.stringify({ request: { cells }, truth: { lat: 52.5, lon: 13.4 } })}\n`);
    const out = join(dir, 'requests.jsonl');
    const r = cli(['eval', '--db', db, ...flags, '--requests-out', out, rows]);
    expect(r.code, r.stderr).toBe(0);
    return {
      written: JSON.parse(readFileSync(out, 'utf8')),
      run: (f: string[]) => cli(['eval', '--db', db, ...f, rows]),
    };
  }

  it('--level-offset moves every cell level the engine and the baselines read, and refuses a bad value', () => {
    const cell = { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1, signal: -80 };
    const { written, run } = evalOneRow([cell], ['--json', '--level-offset=-7']);
    expect(written).toMatchObject({ cells: [{ signal: -87 }] });
    for (const bad of ['loud', '61', '']) {
      const b = run([`--level-offset=${bad}`]);
      expect(b.code).toBe(2);
      expect(b.stderr).toMatch(/--level-offset takes dB/);
    }
  });

  it('--drop-levels takes the levels off before the engine reads them, and refuses a bad value', () => {
    const cell = (cid: number, signal: number) => ({ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid, signal });
    const { written, run } = evalOneRow([cell(1, -70), cell(2, -90)], ['--drop-levels', 'neighbours']);
    expect(written.cells).toEqual([cell(1, -70), { radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 2 }]);
    const b = run(['--drop-levels', 'some']);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/--drop-levels takes `cells`/);
  });

  it('--split files: the rows of a tested file never reach learning', () => {
    const dir = tempDir('wb-eval-split-');
    // Four files sorted a/1, a/2, a/3, b/4: b/4 is tested. Its cell (LAC 9) is in no other file.
    const line = (lac: number, cid: number, lat: number, t: number) =>
      `1,1,${lac},${cid},${lat.toFixed(6)},8.000000,-80,${1_700_000_000_000 + t * 1000},10,0,0,GSM,,,,,,,`;
    const rows = (lac: number, cid: number) =>
      Array.from({ length: 6 }, (_, i) => line(lac, cid, 50 + i * 0.0005, i)).join('\n');
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    for (const n of [1, 2, 3]) writeFileSync(join(dir, 'a', `${n}.csv`), `${OCID_HEADER}\n${rows(7, 300)}\n`);
    writeFileSync(join(dir, 'b', '4.csv'), `${OCID_HEADER}\n${rows(9, 500)}\n${line(7, 300, 50.001, 99)}\n`);
    const r = cli(['eval', '--split', 'files', '--json', dir]);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as EvalJson;
    const b = json.table.filter((l) => l.scenario === 'b');
    // LAC 9's rows: unknown to the learned database and to every baseline.
    const lac9 = b.find((l) => l.by === 'fallback' && l.value === 'no answer');
    expect(lac9?.ours.count).toBe(6);
    const all = b.find((l) => l.by === 'all');
    expect(all?.ours.count).toBe(7);
    expect(all?.baselines.centroid?.answeredShare).toBeCloseTo(1 / 7, 6);
    expect(json.table.some((l) => l.scenario === 'a')).toBe(false);
  });
});

describe('withCellLevelOffset', () => {
  const row = (request: unknown) => ({ request, truth: { lat: 0, lon: 0 }, scenario: 's' });
  it("moves each cell's level within its radio's range, by the request's radio where the cell names none", () => {
    const moved = withCellLevelOffset(
      row({
        radio: 'lte',
        cells: [
          { cid: 1, signal: -100 },
          { radio: 'gsm', cid: 2, signal: -55 },
          { radio: 'umts', cid: 3 },
          { radio: 'nbiot', cid: 4, signal: -90 },
          { radio: 'no such radio', cid: 5, signal: -90 },
        ],
        wifi: [{ bssid: '00:11:22:33:44:55', signal: -70 }],
      }),
      10,
    );
    expect(moved.request).toEqual({
      radio: 'lte',
      cells: [
        { cid: 1, signal: -90 },
        // GSM's range ends at -51 dBm: a modem reports its limit.
        { radio: 'gsm', cid: 2, signal: -51 },
        { radio: 'umts', cid: 3 },
        // NB-IoT's level is ignored by the spec; an unknown radio has no range.
        { radio: 'nbiot', cid: 4, signal: -90 },
        { radio: 'no such radio', cid: 5, signal: -90 },
      ],
      wifi: [{ bssid: '00:11:22:33:44:55', signal: -70 }],
    });
    expect(
      (
        withCellLevelOffset(row({ cells: [{ radio: 'lte', signal: -136 }] }), -5).request as {
          cells: unknown[];
        }
      ).cells,
    ).toEqual([{ radio: 'lte', signal: -137 }]);
  });

  it('leaves rows without cells, and an offset of 0, as they are', () => {
    const r = row({ wifi: [] });
    expect(withCellLevelOffset(r, 5)).toBe(r);
    const c = row({ cells: [{ radio: 'lte', signal: -90 }] });
    expect(withCellLevelOffset(c, 0)).toBe(c);
    expect(withCellLevelOffset(row(null), 5).request).toBeNull();
  });
});

describe('withoutLevels', () => {
  const row = (request: unknown) => ({ request, truth: { lat: 0, lon: 0 }, scenario: 's' });
  const request = {
    cells: [
      { radio: 'lte', cid: 1, signal: -90, ta: 2 },
      { radio: 'lte', cid: 2, signal: -101 },
      { radio: 'lte', cid: 3 },
    ],
    wifi: [{ bssid: '00:11:22:33:44:55', signal: -70 }],
  };
  it("takes every cell's level off, or every level but the first cell's; advances and APs stay", () => {
    expect(withoutLevels(row(request), 'cells').request).toEqual({
      cells: [
        { radio: 'lte', cid: 1, ta: 2 },
        { radio: 'lte', cid: 2 },
        { radio: 'lte', cid: 3 },
      ],
      wifi: request.wifi,
    });
    expect(withoutLevels(row(request), 'neighbours').request).toEqual({
      cells: [request.cells[0], { radio: 'lte', cid: 2 }, { radio: 'lte', cid: 3 }],
      wifi: request.wifi,
    });
  });

  it("takes every access point's level off, and leaves the cells", () => {
    expect(withoutLevels(row(request), 'wifi').request).toEqual({
      cells: request.cells,
      wifi: [{ bssid: '00:11:22:33:44:55' }],
    });
  });

  it('leaves the row as it is when told nothing or when it has none of those stations', () => {
    const r = row(request);
    expect(withoutLevels(r, undefined)).toBe(r);
    const w = row({ wifi: [] });
    expect(withoutLevels(w, 'cells')).toBe(w);
    const c = row({ cells: request.cells });
    expect(withoutLevels(c, 'wifi')).toBe(c);
  });
});

describe('the world families picture', () => {
  it('marks the worlds outside the band and below 1x, and the median world of each scenario', () => {
    const points = [
      { scenario: 'cells-rural', seed: 1, inside: 0.68, ratio: 1.2 },
      { scenario: 'cells-rural', seed: 2, inside: 0.5, ratio: 0.9 },
      { scenario: 'cells-rural', seed: 3, inside: 0.7, ratio: 1.1 },
      { scenario: 'lacf', seed: 1, inside: 0.8, ratio: Number.NaN },
      { scenario: 'moved-ap', seed: 1, inside: 0.66, ratio: 12 },
    ];
    const svg = worldsSvg('worlds <&>', points, [0.6, 0.76], { 'cells-rural': 1.15, 'moved-ap': 1.15 });
    expect(wellFormed(svg)).toBe('');
    expect(svg).toContain('worlds &lt;&amp;&gt;');
    const red = [...svg.matchAll(/fill="#d7301f"[^>]*><title>([^<]*)</g)].map((m) => m[1]);
    // Rural world 2 is outside the band and below 1x; lacf's 80% is above it.
    expect(red.sort()).toEqual(['world 1: 80.0%', 'world 2: 0.900', 'world 2: 50.0%']);
    // A ratio beyond the axis is written out; lacf has no ratio dot.
    expect(svg).toContain('>12x</text>');
    expect(svg.match(/<title>world \d+: [\d.]+<\/title>/g)?.length).toBe(4);
    // Two median bars per scenario with ratios, one for lacf.
    expect(svg.match(/stroke="#3366cc"/g)?.length).toBe(5);
  });
});

/**
 * Why an XML fragment is not well-formed ('' when it is): balanced tags, quoted attributes,
 * no stray `<` or `&` in text.
 */
function wellFormed(xml: string): string {
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  for (const m of xml.matchAll(token)) {
    if (m[6]) return `stray < at ${m.index}`;
    if (m[5] !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(m[5])) return `bare & at ${m.index}`;
      continue;
    }
    const [, close, name, attrs, selfClose] = m;
    if (attrs && /&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(attrs)) return `bare & in attributes at ${m.index}`;
    if (close) {
      if (stack.pop() !== name) return `</${name}> does not close its element at ${m.index}`;
    } else if (!selfClose) stack.push(name as string);
  }
  return stack.length === 0 ? '' : `unclosed <${stack.join('>, <')}>`;
}
