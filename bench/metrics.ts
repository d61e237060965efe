/**
 * Error statistics for positioning evaluations: median, p90 and the share of true positions
 * inside the reported radius.
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

/** The q-quantile (0..1) of values, by nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** Accumulates the outcome of located requests. */
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
