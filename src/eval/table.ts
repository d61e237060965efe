/**
 * The evaluation as text: the table of a run, and two runs' tables side by side (`--compare`).
 */
import type { BaselineName, TableLine } from './results.js';

/** What `--json` writes, and `--compare` reads. */
export interface EvalJson {
  /** The format of this file; `--compare` refuses others. */
  format: 'whereabouts-eval/1';
  inputs: string[];
  split: string | null;
  /** Answers read from a file instead of the engine (`--answers`). */
  answers: string | null;
  rows: number;
  malformed: number;
  table: TableLine[];
}

const m = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-');
const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-');
const ratio = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

/** A text table: the first `left` columns left-aligned, the others (numbers) right-aligned. */
export function renderColumns(head: string[], rows: string[][], left: number): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (s: string, i: number) => (i < left ? s.padEnd(w[i] as number) : s.padStart(w[i] as number));
  return [head, ...rows].map((r) => r.map(cell).join('  ').trimEnd()).join('\n');
}

const BASELINE_HEAD: Record<BaselineName, string> = {
  serving: 'serving',
  wmean: 'wmean',
  centroid: 'centroid',
  area: 'area',
};

/** The table of a run; errors in metres, ratios = baseline median / ours on rows both answered. */
export function formatTable(lines: readonly TableLine[]): string {
  const names = Object.keys(lines[0]?.baselines ?? {}) as BaselineName[];
  const head = ['scenario', 'rows', 'n', 'answered', 'median', 'p68', 'p90', 'p95', 'max', 'inside'];
  for (const b of names) head.push(`${BASELINE_HEAD[b]} median`, `x${BASELINE_HEAD[b]}`);
  const rows = lines.map((l) => {
    const o = l.ours;
    const r = [
      l.by === 'all' ? l.scenario : '',
      l.by === 'all' ? 'all' : `${l.by} ${l.value}`,
      o.count.toLocaleString('en'),
      pct(o.answeredShare),
      m(o.median),
      m(o.p68),
      m(o.p90),
      m(o.p95),
      m(o.max),
      pct(o.inside),
    ];
    for (const b of names)
      r.push(m(l.baselines[b]?.median ?? Number.NaN), ratio(l.baselines[b]?.ratio ?? Number.NaN));
    return r;
  });
  return renderColumns(head, rows, 2);
}

/** Reads an `--json` output, refusing other files with a message naming what was expected. */
export function parseEvalJson(text: string, file: string): EvalJson {
  let v: Partial<EvalJson>;
  try {
    v = JSON.parse(text) as Partial<EvalJson>;
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message})`);
  }
  if (v.format !== 'whereabouts-eval/1' || !Array.isArray(v.table))
    throw new Error(`${file}: not the output of "whereabouts eval --json" (format whereabouts-eval/1)`);
  return v as EvalJson;
}

/**
 * Two runs side by side, line by line (scenario, then radio, fallback or advance): each one's count,
 * median, p90 and inside share, and B's median over A's (below 1: B's errors are smaller).
 */
export function formatCompare(a: EvalJson, b: EvalJson): string {
  const key = (l: TableLine) => `${l.scenario}\u0000${l.by}\u0000${l.value}`;
  const inB = new Map(b.table.map((l) => [key(l), l]));
  const seen = new Set<string>();
  const rows: string[][] = [];
  const row = (x: TableLine | undefined, y: TableLine | undefined) => {
    const l = (x ?? y) as TableLine;
    const ma = x?.ours.median ?? Number.NaN;
    const mb = y?.ours.median ?? Number.NaN;
    rows.push([
      l.by === 'all' ? l.scenario : '',
      l.by === 'all' ? 'all' : `${l.by} ${l.value}`,
      x ? x.ours.count.toLocaleString('en') : '-',
      m(ma),
      m(x?.ours.p90 ?? Number.NaN),
      pct(x?.ours.inside ?? Number.NaN),
      y ? y.ours.count.toLocaleString('en') : '-',
      m(mb),
      m(y?.ours.p90 ?? Number.NaN),
      pct(y?.ours.inside ?? Number.NaN),
      ratio(mb / ma),
    ]);
  };
  for (const l of a.table) {
    seen.add(key(l));
    row(l, inB.get(key(l)));
  }
  for (const l of b.table) if (!seen.has(key(l))) row(undefined, l);
  const head = [
    'scenario',
    'rows',
    'A n',
    'A median',
    'A p90',
    'A inside',
    'B n',
    'B median',
    'B p90',
    'B inside',
    'B/A median',
  ];
  return renderColumns(head, rows, 2);
}
