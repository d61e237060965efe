/**
 * The cost of a call into the addon on the two hot paths, for comparing builds of the binding
 * (raw N-API against napi-rs's safe function API, say): each addon given is loaded side by
 * side in this process and their engines' `locateFunction` and `reverseKeyFunction` are timed
 * in turn, round after round, so that load on the machine drifts across all of them alike.
 * CPU time per call, medians over rounds (ns):
 *  - `locate, empty batch`: the call alone (arguments read, no request);
 *  - `locate, 1 request`: a one-request call, as `engine.process` makes;
 *  - `reverseKey, no answer`: the call alone (an invalid coordinate answers -1 at once);
 *  - `reverseKey, Paris`: a lookup with its answer.
 *
 *   npx tsx bench/napi-calls.ts [--rounds N] [ADDON.node ...]   (default: native/ only)
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { countryPolygonsFile, defaultDbDir, placesFile } from '../src/data-files.js';
import { parseRequestText } from '../src/locating/request/index.js';
import type { NativeBinding } from '../src/native/binding.js';
import { WireBuffers } from '../src/native/wire.js';

const { values, positionals } = parseArgs({
  options: { rounds: { type: 'string', default: '15' } },
  allowPositionals: true,
});
const require = createRequire(import.meta.url);
const paths = positionals.length > 0 ? positionals : ['native/index.cjs'];

const text = readFileSync('data/demo-requests.jsonl', 'utf8').split('\n')[0] as string;
const parsed = parseRequestText(text);
if (!parsed.ok) throw new Error('the demo request does not parse');
const one = new WireBuffers();
one.encode([parsed.request]);
one.reserveAnswers(1);
const empty = new Float64Array(16);

interface Case {
  name: string;
  run: (n: number) => number;
}
const cases: Case[] = [];
for (const path of paths) {
  const addon = require(resolve(path)) as NativeBinding;
  const engine = addon.NativeEngine.open({
    db: defaultDbDir,
    places: placesFile,
    countryPolygons: countryPolygonsFile,
  });
  const locate = engine.locateFunction();
  const reverseKey = engine.reverseKeyFunction();
  const tag = path.replace(/.*\//, '');
  const ips = one.ipsArgument();
  cases.push(
    { name: `${tag} locate, empty batch`, run: (n) => loop(n, () => locate(empty, 0, undefined)) },
    { name: `${tag} locate, 1 request`, run: (n) => loop(n, () => locate(one.buffer, one.length, ips)) },
    { name: `${tag} reverseKey, no answer`, run: (n) => loop(n, () => reverseKey(999, 0, 18)) },
    { name: `${tag} reverseKey, Paris`, run: (n) => loop(n, () => reverseKey(48.8566, 2.3522, 18)) },
  );
}

/** CPU ns per call of `n` calls of `f` (CPU time: on a shared machine wall time mostly measures the neighbours). */
function loop(n: number, f: () => number): number {
  let sink = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) sink += f();
  const used = process.cpuUsage(start);
  const ns = ((used.user + used.system) * 1000) / n;
  if (sink === Number.NEGATIVE_INFINITY) console.log(sink);
  return ns;
}

const N = 200_000;
for (const c of cases) c.run(N); // warm up
const times = new Map<string, number[]>(cases.map((c) => [c.name, []]));
for (let r = 0; r < Number(values.rounds); r++) {
  for (const c of cases) times.get(c.name)?.push(c.run(N));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`CPU ns per call, median of ${values.rounds} rounds of ${N} calls (${process.version})`);
console.table(cases.map((c) => ({ case: c.name, ns: Math.round(median(times.get(c.name) ?? [])) })));
