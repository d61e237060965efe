/**
 * One scenario file of a simulator world scored for the accuracy benches: the engine's median
 * error, its median beside the weighted mean's on the same requests (`wmean/ours`, the paired
 * ratio of bench/accuracy.ts), and the share of true positions inside the radius.
 */
import { readFileSync } from 'node:fs';
import type { Engine } from '../src/engine.js';
import { distanceM, ErrorStats, quantile } from '../src/eval/metrics.js';
import { type LocateRequest, parseRequest } from '../src/locating/request/index.js';
import type { MapBaseline } from './baseline.js';

export interface ScenarioScore {
  /** The engine's median error, metres. */
  median: number;
  /** The weighted mean's median error over ours, on the requests both answered; NaN if none. */
  ratio: number;
  /** Share of true positions inside the stated radius. */
  inside: number;
}

/** Scores the labelled requests of `file` (scenario JSON lines) through `engine`. */
export function scoreScenario(engine: Engine, file: string, baseline: MapBaseline): ScenarioScore {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { truth: { lat: number; lon: number }; request: unknown });
  const responses = engine.processBatch(lines.map((l) => l.request));
  const ours = new ErrorStats();
  const pairedOurs: number[] = [];
  const pairedMean: number[] = [];
  lines.forEach((l, i) => {
    const r = responses[i];
    const a = r?.status === 'ok' && r.lat !== undefined && r.lon !== undefined ? r : undefined;
    ours.add(l.truth, a && { lat: a.lat as number, lon: a.lon as number, accuracy: a.accuracy });
    const parsed = parseRequest(l.request);
    const req: LocateRequest | undefined = parsed.ok ? parsed.request : undefined;
    const m = req && baseline.weightedMean(req);
    if (a && m) {
      pairedOurs.push(distanceM(l.truth.lat, l.truth.lon, a.lat as number, a.lon as number));
      pairedMean.push(distanceM(l.truth.lat, l.truth.lon, m.lat, m.lon));
    }
  });
  return {
    median: ours.median,
    ratio: pairedOurs.length ? quantile(pairedMean, 0.5) / quantile(pairedOurs, 0.5) : Number.NaN,
    inside: ours.insideShare,
  };
}
