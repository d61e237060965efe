/**
 * The HTML report of an evaluation (`--report FILE.html`): one self-contained file, every
 * picture an inline SVG drawn here (no script, no network): the error CDF of each scenario with
 * its baselines, a calibration plot, error histograms, a map of where the errors are large over
 * the embedded coastline, and the table.
 */
import { landFile } from '../data-files.js';
import { native } from '../native/binding.js';
import { quantileSorted } from './metrics.js';
import { BASELINES, type BaselineName, type Results } from './results.js';
import type { EvalJson } from './table.js';
import { formatTable } from './table.js';

const COLORS: Record<'ours' | BaselineName, string> = {
  ours: '#1b1b1b',
  serving: '#d95f02',
  wmean: '#7570b3',
  centroid: '#1b9e77',
  area: '#e7298a',
};
const LABELS: Record<'ours' | BaselineName, string> = {
  ours: 'engine',
  serving: 'serving cell',
  wmean: 'weighted mean',
  centroid: 'centroid of training',
  area: 'LAC/TAC area',
};

const W = 560;
const H = 340;
const PAD = { l: 56, r: 16, t: 28, b: 44 };

const esc = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const f1 = (x: number) => (Math.round(x * 10) / 10).toString();

/** A log10 axis from `lo` to `hi` (powers of ten), mapped onto pixels `a`..`b`. */
function logScale(lo: number, hi: number, a: number, b: number) {
  const l0 = Math.floor(Math.log10(Math.max(lo, 0.1)));
  const l1 = Math.max(l0 + 1, Math.ceil(Math.log10(Math.max(hi, 1))));
  const at = (v: number) => a + ((Math.log10(Math.max(v, 10 ** l0)) - l0) / (l1 - l0)) * (b - a);
  const ticks: number[] = [];
  for (let e = l0; e <= l1; e++) ticks.push(10 ** e);
  return { at, ticks };
}

const tickLabel = (v: number) => (v >= 1000 ? `${v / 1000} km` : `${v} m`);

function frame(title: string, body: string, xTitle: string, yTitle: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">` +
    `<rect width="${W}" height="${H}" fill="#fff"/>` +
    `<text x="${PAD.l}" y="16" font-size="13" font-weight="bold">${esc(title)}</text>` +
    body +
    `<text x="${(PAD.l + W - PAD.r) / 2}" y="${H - 8}" text-anchor="middle">${esc(xTitle)}</text>` +
    `<text transform="translate(14 ${(PAD.t + H - PAD.b) / 2}) rotate(-90)" text-anchor="middle">${esc(yTitle)}</text>` +
    '</svg>'
  );
}

/** A picture of its own size: white, `title` at its top left, then `body`. */
function page(w: number, h: number, title: string, body: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="sans-serif" font-size="11">` +
    `<rect width="${w}" height="${h}" fill="#fff"/><text x="10" y="16" font-size="13" font-weight="bold">${esc(title)}</text>${body}</svg>`
  );
}

function axes(
  x: { at: (v: number) => number; ticks: number[] },
  y: { at: (v: number) => number; ticks: number[] },
  yLabel: (v: number) => string,
): string {
  let s = '';
  for (const t of x.ticks) {
    const px = f1(x.at(t));
    s += `<line x1="${px}" y1="${PAD.t}" x2="${px}" y2="${H - PAD.b}" stroke="#ddd"/>`;
    s += `<text x="${px}" y="${H - PAD.b + 14}" text-anchor="middle">${tickLabel(t)}</text>`;
  }
  for (const t of y.ticks) {
    const py = f1(y.at(t));
    s += `<line x1="${PAD.l}" y1="${py}" x2="${W - PAD.r}" y2="${py}" stroke="#ddd"/>`;
    s += `<text x="${PAD.l - 4}" y="${py}" text-anchor="end" dominant-baseline="middle">${yLabel(t)}</text>`;
  }
  return `${s}<rect x="${PAD.l}" y="${PAD.t}" width="${W - PAD.l - PAD.r}" height="${H - PAD.t - PAD.b}" fill="none" stroke="#888"/>`;
}

function legend(items: [string, string][]): string {
  return items
    .map(
      ([label, color], i) =>
        `<line x1="${W - PAD.r - 150}" y1="${PAD.t + 14 + i * 15}" x2="${W - PAD.r - 128}" y2="${PAD.t + 14 + i * 15}" stroke="${color}" stroke-width="2"/>` +
        `<text x="${W - PAD.r - 122}" y="${PAD.t + 14 + i * 15}" dominant-baseline="middle">${esc(label)}</text>`,
    )
    .join('');
}

const sortedFinite = (xs: number[]) => Float64Array.from(xs.filter((x) => !Number.isNaN(x))).sort();

/** The error CDF of some rows: the engine and each baseline, the share of rows (answered or not) within x metres. */
export function cdfSvg(title: string, r: Results, rows: readonly number[]): string {
  const series: ['ours' | BaselineName, Float64Array][] = [
    ['ours', sortedFinite(rows.map((i) => r.error[i] as number))],
  ];
  for (const b of BASELINES)
    if ((b !== 'centroid' || r.centroid) && (b !== 'area' || r.area))
      series.push([b, sortedFinite(rows.map((i) => r.baselines[b][i] as number))]);
  const hi = Math.max(10, ...series.map(([, s]) => (s.length ? (s[s.length - 1] as number) : 0)));
  const x = logScale(1, hi, PAD.l, W - PAD.r);
  const yTicks = [0, 0.25, 0.5, 0.68, 0.9, 1];
  const y = { at: (v: number) => H - PAD.b - v * (H - PAD.t - PAD.b), ticks: yTicks };
  let body = axes(x, y, (v) => `${Math.round(v * 100)}%`);
  const n = Math.max(rows.length, 1);
  for (const [name, s] of series) {
    // At most 400 steps: one point per rank quantile keeps the file small and the curve exact to the pixel.
    const pts: string[] = [`${f1(x.at(s[0] ?? 1))},${f1(y.at(0))}`];
    const steps = Math.min(400, s.length);
    for (let k = 1; k <= steps; k++) {
      const idx = Math.ceil((k * s.length) / steps) - 1;
      pts.push(`${f1(x.at(s[idx] as number))},${f1(y.at((idx + 1) / n))}`);
    }
    body += `<polyline fill="none" stroke="${COLORS[name]}" stroke-width="${name === 'ours' ? 2 : 1.5}" points="${pts.join(' ')}"/>`;
  }
  body += legend(series.map(([name]) => [LABELS[name], COLORS[name]]));
  return frame(title, body, 'error (log scale)', 'share of rows within');
}

/**
 * Stated radius against the actual error: the rows with a radius in ten bins of equal count,
 * each drawn at its median radius with the 50%, 68% and 90% quantiles of its errors. A
 * calibrated 68% radius puts the 68% curve on the diagonal.
 */
export function calibrationSvg(title: string, r: Results, rows: readonly number[]): string {
  const pairs = rows
    .filter((i) => !Number.isNaN(r.radius[i] as number) && !Number.isNaN(r.error[i] as number))
    .map((i) => [r.radius[i] as number, r.error[i] as number] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const bins = Math.min(10, pairs.length);
  const points: { radius: number; q: number[] }[] = [];
  for (let k = 0; k < bins; k++) {
    const part = pairs.slice(
      Math.floor((k * pairs.length) / bins),
      Math.floor(((k + 1) * pairs.length) / bins),
    );
    const radii = Float64Array.from(part.map((p) => p[0]));
    const errs = Float64Array.from(part.map((p) => p[1])).sort();
    points.push({
      radius: quantileSorted(radii, 0.5),
      q: [0.5, 0.68, 0.9].map((q) => quantileSorted(errs, q)),
    });
  }
  const hi = Math.max(10, ...points.flatMap((p) => [p.radius, ...p.q]));
  const lo = Math.min(hi / 10, ...points.flatMap((p) => [p.radius, ...p.q]).filter((v) => v > 0));
  const x = logScale(lo, hi, PAD.l, W - PAD.r);
  const yl = logScale(lo, hi, H - PAD.b, PAD.t);
  let body = axes(x, yl, tickLabel);
  const d0 = x.ticks[0] as number;
  const d1 = x.ticks[x.ticks.length - 1] as number;
  body += `<line x1="${f1(x.at(d0))}" y1="${f1(yl.at(d0))}" x2="${f1(x.at(d1))}" y2="${f1(yl.at(d1))}" stroke="#999" stroke-dasharray="4 3"/>`;
  const colors = ['#66a61e', '#1b1b1b', '#e7298a'];
  [0, 1, 2].forEach((qi) => {
    const pts = points.map((p) => `${f1(x.at(p.radius))},${f1(yl.at(p.q[qi] as number))}`);
    body += `<polyline fill="none" stroke="${colors[qi]}" stroke-width="1.5" points="${pts.join(' ')}"/>`;
    for (const p of pts) {
      const [cx, cy] = p.split(',');
      body += `<circle cx="${cx}" cy="${cy}" r="2.5" fill="${colors[qi]}"/>`;
    }
  });
  body += legend([
    ['50% of errors within', colors[0] as string],
    ['68% of errors within', colors[1] as string],
    ['90% of errors within', colors[2] as string],
    ['radius = error', '#999'],
  ]);
  return frame(title, body, 'stated radius, median of the bin (log)', 'error (log)');
}

/** A histogram of the engine's errors in bins of a fifth of a decade. */
export function histogramSvg(title: string, r: Results, rows: readonly number[]): string {
  const errs = rows.map((i) => r.error[i] as number).filter((e) => !Number.isNaN(e));
  const hi = Math.max(10, ...errs);
  const x = logScale(1, hi, PAD.l, W - PAD.r);
  const l0 = Math.log10(x.ticks[0] as number);
  const l1 = Math.log10(x.ticks[x.ticks.length - 1] as number);
  const nb = Math.round((l1 - l0) * 5);
  const counts = new Array<number>(nb).fill(0);
  for (const e of errs) {
    const bin = Math.min(nb - 1, Math.max(0, Math.floor((Math.log10(Math.max(e, 1e-9)) - l0) * 5)));
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  const top = Math.max(1, ...counts);
  const yTicks = [0, Math.round(top / 2), top];
  const y = { at: (v: number) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b), ticks: yTicks };
  let body = axes(x, y, (v) => v.toLocaleString('en'));
  counts.forEach((c, k) => {
    const a = x.at(10 ** (l0 + k / 5));
    const b = x.at(10 ** (l0 + (k + 1) / 5));
    body += `<rect x="${f1(a + 0.5)}" y="${f1(y.at(c))}" width="${f1(b - a - 1)}" height="${f1(y.at(0) - y.at(c))}" fill="#4a7fb5"/>`;
  });
  return frame(title, body, 'error (log scale)', 'rows');
}

/**
 * Where the errors are large: every row at its true position (at most 20,000: an even stride,
 * plus the largest errors), coloured by its error against the run's median and p90, over the
 * coastline of the embedded land polygons.
 */
export function mapSvg(title: string, r: Results, land: string | false = landFile): string {
  const idx: number[] = [];
  for (let i = 0; i < r.count; i++) if (!Number.isNaN(r.error[i] as number)) idx.push(i);
  const w = 560;
  const h = 480;
  if (idx.length === 0) return frame(title, '', '', '');
  const lats = Float64Array.from(idx.map((i) => r.lat[i] as number)).sort();
  const lons = Float64Array.from(idx.map((i) => r.lon[i] as number)).sort();
  // The 0.5% to 99.5% span: one stray row must not shrink everyone else to a dot.
  let lat0 = quantileSorted(lats, 0.005);
  let lat1 = quantileSorted(lats, 0.995);
  let lon0 = quantileSorted(lons, 0.005);
  let lon1 = quantileSorted(lons, 0.995);
  const padLat = Math.max((lat1 - lat0) * 0.08, 0.005);
  const padLon = Math.max((lon1 - lon0) * 0.08, 0.005);
  [lat0, lat1, lon0, lon1] = [lat0 - padLat, lat1 + padLat, lon0 - padLon, lon1 + padLon];
  const k = Math.cos((((lat0 + lat1) / 2) * Math.PI) / 180);
  const scale = Math.min((w - 20) / ((lon1 - lon0) * k), (h - 50) / (lat1 - lat0));
  const px = (lon: number) => 10 + (lon - lon0) * k * scale;
  const py = (lat: number) => h - 10 - (lat - lat0) * scale;
  let body = `<rect x="10" y="40" width="${w - 20}" height="${h - 50}" fill="#eef4f8" stroke="#888"/>`;
  const coast = land && native().landCoast ? native().landCoast?.(land, lat0, lon0, lat1, lon1) : undefined;
  if (coast && coast.length > 0) {
    let d = '';
    for (let e = 0; e + 3 < coast.length; e += 4)
      d += `M${f1(px(coast[e + 1] as number))} ${f1(py(coast[e] as number))}L${f1(px(coast[e + 3] as number))} ${f1(py(coast[e + 2] as number))}`;
    body += `<clipPath id="m"><rect x="10" y="40" width="${w - 20}" height="${h - 50}"/></clipPath><path clip-path="url(#m)" d="${d}" stroke="#3b6e8f" stroke-width="1" fill="none"/>`;
  }
  const errs = Float64Array.from(idx.map((i) => r.error[i] as number)).sort();
  const med = quantileSorted(errs, 0.5);
  const p90 = quantileSorted(errs, 0.9);
  const stride = Math.max(1, Math.ceil(idx.length / 20_000));
  const chosen = new Set(idx.filter((_, j) => j % stride === 0));
  for (const i of [...idx]
    .sort((a, b) => (r.error[b] as number) - (r.error[a] as number) || a - b)
    .slice(0, 1000))
    chosen.add(i);
  // Small errors first, so the large ones are drawn on top.
  const order = [...chosen].sort((a, b) => (r.error[a] as number) - (r.error[b] as number) || a - b);
  for (const i of order) {
    const e = r.error[i] as number;
    const [color, rad] = e > p90 ? ['#d7301f', 2.6] : e > med ? ['#fc8d59', 1.8] : ['#1a9850', 1.4];
    const cx = px(r.lon[i] as number);
    const cy = py(r.lat[i] as number);
    if (cx < 10 || cx > w - 10 || cy < 40 || cy > h - 10) continue;
    body += `<circle cx="${f1(cx)}" cy="${f1(cy)}" r="${rad}" fill="${color}" fill-opacity="0.8"/>`;
  }
  body += `<text x="10" y="32">green: error up to the median (${Math.round(med)} m); orange: up to p90 (${Math.round(p90)} m); red: above</text>`;
  return page(w, h, title, body);
}

/** One world's figures in one scenario, for {@link worldsSvg}. */
export interface WorldPoint {
  scenario: string;
  seed: number;
  /** Share of truths within the stated 68% radius. */
  inside: number;
  /** The baseline's median error over ours (NaN where there is none). */
  ratio: number;
}

/**
 * Every world of every scenario in two panels: its share of truths inside the 68% radius
 * against the target band, and its median-error ratio to the baseline against the target
 * ratio and 1 (log scale; a ratio beyond the axis sits at its edge with its value). Each world
 * is a dot, red where it misses; the median world is a bar.
 */
export function worldsSvg(
  title: string,
  points: readonly WorldPoint[],
  band: readonly [number, number],
  ratioTarget: Readonly<Record<string, number>>,
): string {
  const scenarios = [...new Set(points.map((p) => p.scenario))];
  const rowH = 22;
  const top = 48;
  const labelW = 150;
  const panelW = 300;
  const gap = 44;
  const h = top + scenarios.length * rowH + 40;
  const w = labelW + 2 * panelW + gap + 56;
  const ix = (v: number) => labelW + Math.min(Math.max(v, 0), 1) * panelW;
  const [rLo, rHi] = [0.8, 2];
  const x0 = labelW + panelW + gap;
  const rx = (v: number) =>
    x0 +
    ((Math.log(Math.min(Math.max(v, rLo), rHi)) - Math.log(rLo)) / (Math.log(rHi) - Math.log(rLo))) * panelW;
  const yOf = (i: number) => top + i * rowH + rowH / 2;
  const bottom = top + scenarios.length * rowH;
  let body =
    `<rect x="${f1(ix(band[0]))}" y="${top}" width="${f1(ix(band[1]) - ix(band[0]))}" height="${bottom - top}" fill="#e3f2e3"/>` +
    `<text x="${labelW + panelW / 2}" y="${top - 8}" text-anchor="middle">inside the 68% radius (target ${Math.round(band[0] * 100)}-${Math.round(band[1] * 100)}% in every world)</text>` +
    `<text x="${x0 + panelW / 2}" y="${top - 8}" text-anchor="middle">baseline median / ours (log; target dashed)</text>`;
  for (const t of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    const px = f1(ix(t));
    body += `<line x1="${px}" y1="${top}" x2="${px}" y2="${bottom}" stroke="#ddd"/><text x="${px}" y="${bottom + 14}" text-anchor="middle">${Math.round(t * 100)}%</text>`;
  }
  body += `<line x1="${f1(ix(0.68))}" y1="${top}" x2="${f1(ix(0.68))}" y2="${bottom}" stroke="#1b9e77" stroke-dasharray="3 2"/>`;
  for (const t of [0.8, 1, 1.15, 1.5, 2]) {
    const px = f1(rx(t));
    body += `<line x1="${px}" y1="${top}" x2="${px}" y2="${bottom}" stroke="${t === 1 ? '#888' : '#ddd'}"/><text x="${px}" y="${bottom + 14}" text-anchor="middle">${t}x</text>`;
  }
  scenarios.forEach((scenario, i) => {
    const y = yOf(i);
    const ps = points.filter((p) => p.scenario === scenario);
    body += `<text x="${labelW - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${esc(scenario)}</text>`;
    if (i % 2 === 1)
      body += `<rect x="${labelW}" y="${y - rowH / 2}" width="${w - labelW - 20}" height="${rowH}" fill="#000" fill-opacity="0.03"/>`;
    const target = ratioTarget[scenario];
    if (target !== undefined) {
      const px = f1(rx(target));
      body += `<line x1="${px}" y1="${y - rowH / 2 + 2}" x2="${px}" y2="${y + rowH / 2 - 2}" stroke="#1b9e77" stroke-width="2" stroke-dasharray="3 2"/>`;
    }
    const inside = sortedFinite(ps.map((p) => p.inside));
    const ratios = sortedFinite(ps.map((p) => p.ratio));
    for (const p of ps) {
      const miss = p.inside < band[0] || p.inside > band[1];
      body += `<circle cx="${f1(ix(p.inside))}" cy="${y}" r="3" fill="${miss ? '#d7301f' : '#1b1b1b'}" fill-opacity="0.7"><title>world ${p.seed}: ${(100 * p.inside).toFixed(1)}%</title></circle>`;
      if (!Number.isNaN(p.ratio)) {
        const low = target !== undefined && p.ratio < 1;
        body += `<circle cx="${f1(rx(p.ratio))}" cy="${y}" r="3" fill="${low ? '#d7301f' : '#1b1b1b'}" fill-opacity="0.7"><title>world ${p.seed}: ${p.ratio.toFixed(3)}</title></circle>`;
      }
    }
    if (inside.length) {
      const m = f1(ix(quantileSorted(inside, 0.5)));
      body += `<line x1="${m}" y1="${y - 8}" x2="${m}" y2="${y + 8}" stroke="#3366cc" stroke-width="2"/>`;
    }
    if (ratios.length) {
      const med = quantileSorted(ratios, 0.5);
      const m = f1(rx(med));
      body += `<line x1="${m}" y1="${y - 8}" x2="${m}" y2="${y + 8}" stroke="#3366cc" stroke-width="2"/>`;
      const lo = ratios[0] as number;
      const hi = ratios[ratios.length - 1] as number;
      if (hi > rHi)
        body += `<text x="${f1(rx(rHi) + 6)}" y="${y}" dominant-baseline="middle">${lo > rHi && lo.toFixed(0) !== hi.toFixed(0) ? `${lo.toFixed(0)}-` : ''}${hi.toFixed(0)}x</text>`;
    }
  });
  body +=
    `<rect x="${labelW}" y="${top}" width="${panelW}" height="${bottom - top}" fill="none" stroke="#888"/>` +
    `<rect x="${x0}" y="${top}" width="${panelW}" height="${bottom - top}" fill="none" stroke="#888"/>` +
    `<text x="${labelW}" y="${h - 8}">dots: worlds (red: outside the band, or below 1x); blue bar: the median world; dashed: 68% and the target ratio</text>`;
  return page(w, h, title, body);
}

/** Every picture of a run, by scenario, and the whole file. */
export function reportHtml(json: EvalJson, r: Results, land: string | false = landFile): string {
  const parts: string[] = [];
  r.scenarios.forEach((name, s) => {
    const rows: number[] = [];
    for (let i = 0; i < r.count; i++) if (r.scenario[i] === s) rows.push(i);
    parts.push(
      `<h2>${esc(name)}</h2><div class="row">${cdfSvg(`${name}: error CDF`, r, rows)}${calibrationSvg(`${name}: calibration`, r, rows)}${histogramSvg(`${name}: errors`, r, rows)}</div>`,
    );
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>whereabouts eval</title>
<style>body{font-family:sans-serif;margin:24px;color:#1b1b1b}pre{font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto}.row{display:flex;flex-wrap:wrap;gap:12px}svg{border:1px solid #ddd}</style>
</head><body>
<h1>Positioning evaluation</h1>
<p>${json.rows.toLocaleString('en')} rows from ${esc(json.inputs.join(', '))}${json.split ? `, split ${esc(json.split)}` : ''}${json.answers ? `, answers from ${esc(json.answers)}` : ''}; ${json.malformed.toLocaleString('en')} malformed lines skipped. Errors in metres; "inside": share of answered rows within the stated radius; xB: baseline B's median over the engine's on rows both answered (docs/eval.md).</p>
<pre>${esc(formatTable(json.table))}</pre>
<h2>Where the errors are large</h2>
${mapSvg('All rows at their true position', r, land)}
${parts.join('\n')}
</body></html>
`;
}
