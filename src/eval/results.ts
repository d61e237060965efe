/**
 * Per-row outcomes of an evaluation (compact columns, so a million rows stay small) and the
 * table taken from them: per scenario, then per radio, per fallback and by timing advance within it.
 */
import { parseRequest } from '../locating/request/index.js';
import type { ProcessResponse } from '../locating/response.js';
import type { CentroidBaseline, MapBaseline } from './baselines.js';
import type { EvalRow } from './inputs.js';
import { distanceM, type ErrorSummary, pairedRatio, summarise } from './metrics.js';

/**
 * The baselines of a run, in the order of {@link Results.baselines}. `area`: on the rows the
 * engine answered through the LAC/TAC fallback, the same request with `lacf` 2, which the
 * whole LAC/TAC area answers (what a site answer or any nearer cell is measured against).
 */
export const BASELINES = ['serving', 'wmean', 'centroid', 'area'] as const;
export type BaselineName = (typeof BASELINES)[number];

const RADIO_NAMES = ['gsm', 'cdma', 'umts', 'lte', 'nbiot', 'nr'];

/** Outcomes of the rows evaluated so far, one entry per row in input order. */
export class Results {
  readonly scenarios: string[] = [];
  readonly labels: string[] = [];
  readonly scenario: number[] = [];
  readonly radio: number[] = [];
  readonly fallback: number[] = [];
  /** Whether the serving cell reported a timing advance: `reported`, `none`, `no cell`. */
  readonly advance: number[] = [];
  readonly lat: number[] = [];
  readonly lon: number[] = [];
  /** The engine's error in metres and stated radius; NaN when it gave no position. */
  readonly error: number[] = [];
  readonly radius: number[] = [];
  /** Each baseline's error (NaN: no answer). */
  readonly baselines: Record<BaselineName, number[]> = {
    serving: [],
    wmean: [],
    centroid: [],
    area: [],
  };
  /** Whether a centroid baseline took part (observation rows with a split). */
  centroid = false;
  /** Whether the area baseline answered a row (rows the engine answered through `lacf`). */
  area = false;
  readonly #ids = new Map<string, number>();

  get count(): number {
    return this.error.length;
  }

  #id(list: string[], s: string): number {
    const key = `${list === this.scenarios ? 's' : 'l'}:${s}`;
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = list.length;
      list.push(s);
      this.#ids.set(key, id);
    }
    return id;
  }

  /**
   * Records rows with their answers (one per row, in order) and the baselines' answers;
   * `area`: the engine's answers to the same requests with `lacf` 2, where it has them.
   */
  add(
    rows: readonly EvalRow[],
    answers: readonly (ProcessResponse | undefined)[],
    tables: MapBaseline,
    centroid?: CentroidBaseline,
    area?: readonly (ProcessResponse | undefined)[],
  ): void {
    if (centroid) this.centroid = true;
    rows.forEach((row, i) => {
      const a = answers[i];
      const { lat, lon } = row.truth;
      const parsed = parseRequest(row.request);
      const req = parsed.ok ? parsed.request : undefined;
      const serving = req?.cells[0];
      const radio = !req
        ? 'invalid request'
        : serving
          ? (RADIO_NAMES[serving.radio] ?? 'unknown radio')
          : req.wifi.length > 0
            ? 'wifi'
            : 'none';
      const ok = a?.status === 'ok' && typeof a.lat === 'number' && typeof a.lon === 'number';
      const fallback = ok ? (a.fallback ?? 'none') : 'no answer';
      this.scenario.push(this.#id(this.scenarios, row.scenario));
      this.radio.push(this.#id(this.labels, radio));
      this.fallback.push(this.#id(this.labels, fallback));
      const advance = !serving ? 'no cell' : serving.ta === undefined ? 'none' : 'reported';
      this.advance.push(this.#id(this.labels, advance));
      this.lat.push(lat);
      this.lon.push(lon);
      this.error.push(ok ? distanceM(lat, lon, a.lat as number, a.lon as number) : Number.NaN);
      this.radius.push(ok && typeof a.accuracy === 'number' ? a.accuracy : Number.NaN);
      const err = (b: { lat: number; lon: number } | undefined) =>
        b ? distanceM(lat, lon, b.lat, b.lon) : Number.NaN;
      this.baselines.serving.push(err(req && tables.serving(req)));
      this.baselines.wmean.push(err(req && tables.weightedMean(req)));
      this.baselines.centroid.push(err(req && centroid?.answer(req)));
      const byArea = area?.[i];
      const areaOk =
        byArea?.status === 'ok' && typeof byArea.lat === 'number' && typeof byArea.lon === 'number';
      if (areaOk) this.area = true;
      this.baselines.area.push(areaOk ? err(byArea as { lat: number; lon: number }) : Number.NaN);
    });
  }
}

/** One line of the table: the engine's figures, each baseline's and their ratios. */
export interface TableLine {
  scenario: string;
  /** `all`, `radio`, `fallback` or `advance`. */
  by: string;
  /**
   * `all`, the radio (`lte`, `wifi`, ...), the fallback (`none`, `lacf`, `no answer`, ...) or
   * whether the serving cell reported a timing advance (`reported`, `none`, `no cell`).
   */
  value: string;
  ours: ErrorSummary;
  baselines: Partial<
    Record<BaselineName, { median: number; p90: number; answeredShare: number; ratio: number }>
  >;
}

/**
 * The table of a run: per scenario (in order of first appearance), all rows, then by radio, by
 * fallback and by whether the serving cell reported a timing advance.
 */
export function tabulate(r: Results): TableLine[] {
  const out: TableLine[] = [];
  const names = BASELINES.filter((b) => (b === 'centroid' ? r.centroid : b === 'area' ? r.area : true));
  const line = (scenario: string, by: string, value: string, rows: number[]): TableLine => {
    const errs: number[] = [];
    const radii: number[] = [];
    for (const i of rows) {
      const e = r.error[i] as number;
      if (Number.isNaN(e)) continue;
      errs.push(e);
      radii.push(r.radius[i] as number);
    }
    const ours = summarise(rows.length, errs, radii);
    const baselines: TableLine['baselines'] = {};
    const mine = rows.map((i) => r.error[i] as number);
    for (const b of names) {
      const col = rows.map((i) => r.baselines[b][i] as number);
      const s = summarise(
        rows.length,
        col.filter((x) => !Number.isNaN(x)),
      );
      baselines[b] = {
        median: s.median,
        p90: s.p90,
        answeredShare: s.answeredShare,
        ratio: pairedRatio(mine, col),
      };
    }
    return { scenario, by, value, ours, baselines };
  };
  r.scenarios.forEach((scenario, s) => {
    const rows: number[] = [];
    for (let i = 0; i < r.count; i++) if (r.scenario[i] === s) rows.push(i);
    out.push(line(scenario, 'all', 'all', rows));
    for (const [by, col] of [
      ['radio', r.radio],
      ['fallback', r.fallback],
      ['advance', r.advance],
    ] as const) {
      const parts = new Map<number, number[]>();
      for (const i of rows) {
        const v = col[i] as number;
        const p = parts.get(v);
        if (p) p.push(i);
        else parts.set(v, [i]);
      }
      // Sorted by name: the order of first appearance would depend on how the input is ordered.
      const sorted = [...parts].sort(([a], [b]) =>
        (r.labels[a] as string) < (r.labels[b] as string) ? -1 : 1,
      );
      for (const [v, idx] of sorted) out.push(line(scenario, by, r.labels[v] as string, idx));
    }
  });
  return out;
}
