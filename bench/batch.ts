/**
 * What the pipelined `processBatch` gains: every case answers the same batches of the
 * bench/speed.ts workload, in turn, over `--rounds` rounds, and each ratio is taken within a
 * round (medians over rounds; these machines are shared):
 *  - the baseline: the same work without the overlap, as `processBatch` did before session 11
 *    (a chunk of 1,024 requests read and checked, then solved on the batch threads by the
 *    one-call native locate, then shaped);
 *  - `engine.processBatch` on the machine's cores (its default): each chunk of 256 is solved
 *    on the batch threads while the next is read;
 *  - `engine.processBatch` on one thread.
 *
 *   npx tsx bench/batch.ts [--seed N] [--batch N] [--rounds N] [--time MS per case and round]
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { Engine } from '../src/engine.js';
import { RequestReader } from '../src/locating/request/index.js';
import { errorResponse, type ProcessResponse, shapeAnswer } from '../src/locating/response.js';
import { native } from '../src/native/binding.js';
import { WireBuffers } from '../src/native/wire.js';
import { Rounds } from './rounds.js';
import { mixedRequests, speedWorld } from './speed-requests.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    batch: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '7' },
    time: { type: 'string', default: '1000' },
  },
});
const { db, world } = await speedWorld(values.seed as string);
const requests = mixedRequests(world);
const threads = availableParallelism();
const engine = await Engine.open({ db });
const engine1 = await Engine.open({ db, batchThreads: 1 });
const handle = native().NativeEngine.open({ db });
const locate = handle.locateFunction();
const reader = new RequestReader();
const wire = new WireBuffers();

/** Requests read before a threaded solve, as `processBatch` had it: 2 x threads x 256. */
const UNPIPELINED_CHUNK = 2 * threads * 256;
const slots: number[] = [];
const geolocations: (0 | 1)[] = [];
const addresses: (0 | 1 | 2)[] = [];
const languages: (string | undefined)[] = [];

/** A batch answered without the overlap: read a chunk, solve it on `threads`, shape it. */
function unpipelined(batch: readonly unknown[]): ProcessResponse[] {
  const out: ProcessResponse[] = new Array(batch.length);
  for (let start = 0; start < batch.length; start += UNPIPELINED_CHUNK) {
    const end = Math.min(batch.length, start + UNPIPELINED_CHUNK);
    wire.clear();
    let valid = 0;
    for (let i = start; i < end; i++) {
      const message = reader.read(batch[i]);
      if (message !== undefined) {
        out[i] = errorResponse(message);
        continue;
      }
      wire.append(reader);
      slots[valid] = i;
      geolocations[valid] = reader.geolocation;
      addresses[valid] = reader.address;
      languages[valid] = reader.acceptLanguage;
      valid++;
    }
    if (valid === 0) continue;
    wire.reserveAnswers(valid);
    locate(wire.buffer, wire.length, wire.ipsArgument(), threads);
    for (let k = 0; k < valid; k++) {
      out[slots[k] as number] = shapeAnswer(
        geolocations[k] as 0 | 1,
        addresses[k] as 0 | 1 | 2,
        languages[k],
        wire.buffer,
        wire.answerAt(k),
      );
    }
  }
  return out;
}

const BATCH = Number(values.batch);
let next = 0;
/** The next `BATCH` requests of the workload, cycling. */
function slice(): unknown[] {
  const start = next % (requests.length - BATCH);
  next += BATCH;
  return requests.slice(start, start + BATCH);
}

// The baseline must answer as processBatch does, or the comparison means nothing.
const check = requests.slice(0, BATCH);
if (JSON.stringify(unpipelined(check)) !== JSON.stringify(engine.processBatch(check))) {
  throw new Error('the unpipelined baseline answers differently from processBatch');
}

const bench = new Bench({ time: Number(values.time), warmupTime: 300 });
bench
  .add(`baseline: unpipelined (${UNPIPELINED_CHUNK} read, then solved on ${threads} threads)`, () => {
    unpipelined(slice());
  })
  .add(`engine.processBatch (pipelined, ${threads} threads)`, () => {
    engine.processBatch(slice());
  })
  .add('engine.processBatch (one thread)', () => {
    engine1.processBatch(slice());
  });
const rounds = Math.max(1, Number(values.rounds));
const timed = await Rounds.run(bench, rounds, () => BATCH);
const ratio = (a: number, b: number) => timed.ratio(a, b);
console.log(
  `Batches of ${BATCH} mixed simulator requests (median ns per request over ${rounds} rounds; ${process.version})`,
);
console.table(timed.names.map((n, k) => ({ case: n, 'ns/request (p50)': Math.round(timed.ns(k)) })));
console.log(`pipelined vs unpipelined: ${ratio(0, 1)}x`);
console.log(`pipelined vs one thread: ${ratio(2, 1)}x; unpipelined vs one thread: ${ratio(2, 0)}x`);
engine.close();
engine1.close();
handle.close();
