/**
 * Error statistics of positioning evaluations: distances, nearest-rank quantiles, the share of
 * truths inside the stated radius, and the ratio of a baseline's median to the engine's.
 */

/** Great-circle distance in metres. */
export function distanceM(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const r = 6_371_008.8;
  const p1 = (lat1 * Math.PI) / 180;
  const p2 = (lat2 * Math.PI) / 180;
  const dp = p2 - p1;
  const dl = ((lon2 - lon1) * Math.PI) / 180;
  const a = Math.sin(dp / 2) ** 2 + Math.cos(p1) * Math.cos(p2) * Math.sin(dl / 2) ** 2;
  return 2 * r * Math.asin(Math.min(1, Math.sqrt(a)));
}

/**
 * The q-quantile (0..1) of values sorted ascending, by nearest rank: the value at 1-based
 * rank `ceil(q * n)` (at least 1). Always one of the values, never an interpolation.
 */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] as number;
}

/** The q-quantile (0..1) of values, by nearest rank ({@link quantileSorted}). */
export function quantile(values: readonly number[], q: number): number {
  return quantileSorted(Float64Array.from(values).sort(), q);
}

/** The band every world's share of truths inside the 68% radius should hold (issue 23). */
export const INSIDE_BAND = [0.6, 0.76] as const;

/** How far a share lies outside {@link INSIDE_BAND} (0 inside it; infinite for NaN). */
export function outsideBand(x: number): number {
  return Number.isNaN(x) ? Number.POSITIVE_INFINITY : Math.max(INSIDE_BAND[0] - x, x - INSIDE_BAND[1], 0);
}

/** How bad an inside share is: outside the band, how far (plus 1); inside, how far from 68%. */
export function insideBadness(x: number): number {
  return outsideBand(x) === 0 ? Math.abs(x - 0.68) : outsideBand(x) + 1;
}

/** How bad a ratio of the baseline's error over ours is: the lower, the worse (NaN worst). */
export function ratioBadness(x: number): number {
  return Number.isNaN(x) ? Number.POSITIVE_INFINITY : -x;
}

/** The median world and the worst world of one figure over the worlds of a scenario. */
export interface WorldSpread {
  median: number;
  worst: number;
  worstSeed: number;
  min: number;
  max: number;
}

/** {@link WorldSpread} of `value` over `lines` (one per world), the worst by `badness`. */
export function worldSpread<T extends { seed: number }>(
  lines: readonly T[],
  value: (l: T) => number,
  badness: (x: number) => number,
): WorldSpread {
  const vals = lines.map(value).filter((x) => !Number.isNaN(x));
  let worst = lines[0] as T;
  for (const l of lines) if (badness(value(l)) > badness(value(worst))) worst = l;
  return {
    median: quantile(vals, 0.5),
    worst: value(worst),
    worstSeed: worst.seed,
    min: vals.length ? Math.min(...vals) : Number.NaN,
    max: vals.length ? Math.max(...vals) : Number.NaN,
  };
}

/** The figures of one set of errors; NaN where there is nothing to take them from. */
export interface ErrorSummary {
  count: number;
  answered: number;
  /** answered / count. */
  answeredShare: number;
  median: number;
  p68: number;
  p90: number;
  p95: number;
  max: number;
  /** Share of the answered rows whose truth lies within the stated radius (error <= radius). */
  inside: number;
}

/**
 * Summarises `count` rows of which `errors` (metres) were answered; `radii` holds the stated
 * radius of each answered row in the same order (NaN: none stated, never counted inside).
 */
export function summarise(count: number, errors: ArrayLike<number>, radii?: ArrayLike<number>): ErrorSummary {
  const sorted = Float64Array.from(errors as ArrayLike<number>).sort();
  let inside = 0;
  if (radii)
    for (let i = 0; i < errors.length; i++) if ((errors[i] as number) <= (radii[i] as number)) inside++;
  const n = sorted.length;
  return {
    count,
    answered: n,
    answeredShare: count === 0 ? Number.NaN : n / count,
    median: quantileSorted(sorted, 0.5),
    p68: quantileSorted(sorted, 0.68),
    p90: quantileSorted(sorted, 0.9),
    p95: quantileSorted(sorted, 0.95),
    max: n === 0 ? Number.NaN : (sorted[n - 1] as number),
    inside: radii && n > 0 ? inside / n : Number.NaN,
  };
}

/**
 * A baseline's median error over the engine's, on the rows both answered (so that neither is
 * flattered by answering an easier set): above 1, the engine's errors are smaller.
 */
export function pairedRatio(ours: ArrayLike<number>, baseline: ArrayLike<number>): number {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ours.length; i++) {
    const o = ours[i] as number;
    const x = baseline[i] as number;
    if (Number.isNaN(o) || Number.isNaN(x)) continue;
    a.push(o);
    b.push(x);
  }
  if (a.length === 0) return Number.NaN;
  const m = quantile(a, 0.5);
  return m === 0 ? Number.NaN : quantile(b, 0.5) / m;
}

/** Accumulates the outcome of located requests (the benches' running form of {@link summarise}). */
export class ErrorStats {
  readonly errors: number[] = [];
  /** Error / reported radius of each answer that has a radius. */
  readonly ratios: number[] = [];
  inside = 0;
  total = 0;

  /** Records a request: its answer (or none) against the truth. */
  add(truth: { lat: number; lon: number }, answer?: { lat: number; lon: number; accuracy?: number }): void {
    this.total++;
    if (!answer) return;
    const e = distanceM(truth.lat, truth.lon, answer.lat, answer.lon);
    this.errors.push(e);
    if (answer.accuracy !== undefined && answer.accuracy > 0) this.ratios.push(e / answer.accuracy);
    if (answer.accuracy !== undefined && e <= answer.accuracy) this.inside++;
  }

  get answered(): number {
    return this.errors.length;
  }
  get median(): number {
    return quantile(this.errors, 0.5);
  }
  get p90(): number {
    return quantile(this.errors, 0.9);
  }
  /** Share of answered requests whose truth lies inside the reported radius. */
  get insideShare(): number {
    return this.answered === 0 ? Number.NaN : this.inside / this.answered;
  }
}
