/**
 * Where the time of one request of bench/speed.ts goes, each part timed alone over 64-request
 * slices of the same workload (medians of the slices, ns per request):
 *  - `parseRequest` (validation and the LocateRequest objects, the public API's path);
 *  - `RequestReader.read` (validation alone), and with `WireBuffers.append` (the engine's path);
 *  - the native locate call on encoded slices, 64 requests a call and one a call;
 *  - shaping the answers; `engine.process` and `engine.processBatch` (64) for the whole.
 *
 *   npx tsx bench/speed-parts.ts [--seed N] [--rounds N]
 */
import { parseArgs } from 'node:util';
import { Engine } from '../src/engine.js';
import {
  type LocateRequest,
  parseRequest,
  RequestReader,
  type RequestRows,
  rowsOf,
} from '../src/locating/request/index.js';
import { shapeAnswer } from '../src/locating/response.js';
import { native } from '../src/native/binding.js';
import { WireBuffers } from '../src/native/wire.js';
import { mixedRequests, speedWorld } from './speed-requests.js';

const { values } = parseArgs({
  options: { seed: { type: 'string', default: '1' }, rounds: { type: 'string', default: '3' } },
});
const { db, world } = await speedWorld(values.seed as string);
const requests = mixedRequests(world);
const engine = await Engine.open({ db });
const handle = native().NativeEngine.open({ db });
const locate = handle.locateFunction();
const parsed: LocateRequest[] = [];
for (const r of requests) {
  const p = parseRequest(r);
  if (p.ok) parsed.push(p.request);
}
const rows: RequestRows[] = parsed.map(rowsOf);
const reader = new RequestReader();
const wire = new WireBuffers();

const SLICE = 64;
let start = 0;
/** The start of the next slice of `n` items, cycling. */
function next(n: number): number {
  start = (start + SLICE) % (n - SLICE);
  return start;
}

/** Median over `reps` slices of `f`'s ns per request (`f` returns how many it handled). */
function time(reps: number, f: () => number): number {
  const samples: number[] = [];
  for (let k = 0; k < reps; k++) {
    const t0 = process.hrtime.bigint();
    const n = f();
    samples.push(Number(process.hrtime.bigint() - t0) / n);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1] as number;
}

const cases: [string, () => number][] = [
  [
    'parseRequest',
    () => {
      const a = next(requests.length);
      for (let i = a; i < a + SLICE; i++) parseRequest(requests[i]);
      return SLICE;
    },
  ],
  [
    'RequestReader.read',
    () => {
      const a = next(requests.length);
      for (let i = a; i < a + SLICE; i++) reader.read(requests[i]);
      return SLICE;
    },
  ],
  [
    'read + WireBuffers.append',
    () => {
      const a = next(requests.length);
      wire.clear();
      for (let i = a; i < a + SLICE; i++) if (reader.read(requests[i]) === undefined) wire.append(reader);
      return SLICE;
    },
  ],
  [
    'encode request rows (rowsOf taken ahead)',
    () => {
      const a = next(parsed.length);
      wire.clear();
      for (let i = a; i < a + SLICE; i++) wire.append(rows[i] as RequestRows);
      return SLICE;
    },
  ],
  [
    'encode + native locate, 64 a call',
    () => {
      const a = next(parsed.length);
      wire.clear();
      for (let i = a; i < a + SLICE; i++) wire.append(rows[i] as RequestRows);
      wire.reserveAnswers(SLICE);
      locate(wire.buffer, wire.length, wire.ipsArgument());
      return SLICE;
    },
  ],
  [
    'encode + native locate, 1 a call',
    () => {
      const a = next(parsed.length);
      for (let i = a; i < a + SLICE; i++) {
        wire.clear();
        wire.append(rowsOf(parsed[i] as LocateRequest));
        wire.reserveAnswers(1);
        locate(wire.buffer, wire.length, wire.ipsArgument());
      }
      return SLICE;
    },
  ],
  [
    'encode + native locate (64) + shape',
    () => {
      const a = next(parsed.length);
      wire.clear();
      for (let i = a; i < a + SLICE; i++) wire.append(rows[i] as RequestRows);
      wire.reserveAnswers(SLICE);
      locate(wire.buffer, wire.length, wire.ipsArgument());
      for (let k = 0; k < SLICE; k++) {
        const r = parsed[a + k] as LocateRequest;
        shapeAnswer(r.geolocation, r.address, r.acceptLanguage, wire.buffer, wire.answerAt(k));
      }
      return SLICE;
    },
  ],
  [
    'engine.process',
    () => {
      const a = next(requests.length);
      for (let i = a; i < a + SLICE; i++) engine.process(requests[i]);
      return SLICE;
    },
  ],
  [
    'engine.processBatch (64 a call)',
    () => {
      const a = next(requests.length);
      engine.processBatch(requests.slice(a, a + SLICE));
      return SLICE;
    },
  ],
];

const rounds = Math.max(1, Number(values.rounds));
const perRound: number[][] = [];
for (let round = 0; round < rounds; round++) perRound.push(cases.map(([, f]) => time(2000, f)));
console.log(
  `Parts of a request on ${requests.length} mixed simulator requests, ns (median of ${rounds} rounds)`,
);
console.table(
  cases.map(([name], k) => {
    const xs = perRound.map((r) => r[k] as number).sort((a, b) => a - b);
    return { part: name, ns: Math.round(xs[xs.length >> 1] as number) };
  }),
);
engine.close();
handle.close();
