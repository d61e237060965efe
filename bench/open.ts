/**
 * What opening costs: `Engine.open()` with no options (the demo stations, land, IP and every
 * geocoding file), and the first call of each geocoding method after it, which pays for the
 * data it needs when that is read on first use.
 *  - open: median (min, max) of `--opens` opens and closes in this process;
 *  - first calls: per method, `--rounds` fresh engines, each opened, asked once, closed; the
 *    median of the first call alone, then of a second call on the same engine;
 *  - prepare: the median time of `prepareTimezones`, `prepareReverse` (when the library has it)
 *    and `prepareSearch` right after an open, which a server calls at start, and of the first
 *    call right after it (the first search waits for the rest of the word index).
 * The files are in the page cache after the first open: this measures the work of reading and
 * checking them, not the disk.
 *
 *   npx tsx bench/open.ts [--opens 20] [--rounds 7] [--lib path/to/dist/index.js]
 *
 * `--lib` runs another build (e.g. a copy of main's dist/ and native/) for a before/after in
 * alternating processes.
 */
import { parseArgs } from 'node:util';
import { median } from './rounds.js';

const { values } = parseArgs({
  options: {
    opens: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '7' },
    lib: { type: 'string' },
  },
});

interface Engine {
  timezone(q: { lat: number; lon: number }): unknown;
  reverse(q: { lat: number; lon: number; zoom?: number }): unknown;
  search(q: { q: string }): unknown;
  prepareTimezones(): void;
  prepareSearch(): void;
  prepareReverse?: () => void;
  close(): void;
}
const lib = (await import(values.lib ?? '../src/index.js')) as {
  Engine: { open(o?: object): Promise<Engine> };
};

const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;

// one open unmeasured: the native module, the IP database and the files into the page cache
(await lib.Engine.open()).close();

const opens: number[] = [];
for (let i = 0; i < Number(values.opens); i++) {
  const t = performance.now();
  const e = await lib.Engine.open();
  opens.push(performance.now() - t);
  e.close();
}
console.log(
  `Engine.open() default: median ${fmt(median(opens))} (min ${fmt(Math.min(...opens))}, max ${fmt(Math.max(...opens))}) over ${opens.length} opens`,
);

const calls: [string, (e: Engine) => unknown][] = [
  ['timezone', (e) => e.timezone({ lat: 48.85, lon: 2.35 })],
  ['reverse', (e) => e.reverse({ lat: 48.85, lon: 2.35, zoom: 18 })],
  ['search', (e) => e.search({ q: 'paris' })],
];
for (const [name, call] of calls) {
  const first: number[] = [];
  const second: number[] = [];
  for (let i = 0; i < Number(values.rounds); i++) {
    const e = await lib.Engine.open();
    let t = performance.now();
    call(e);
    first.push(performance.now() - t);
    t = performance.now();
    call(e);
    second.push(performance.now() - t);
    e.close();
  }
  console.log(`first ${name} after open: median ${fmt(median(first))}; second ${fmt(median(second))}`);
}

const prepares: [string, (e: Engine) => void][] = [
  ['prepareTimezones', (e) => e.prepareTimezones()],
  ['prepareReverse', (e) => e.prepareReverse?.()],
  ['prepareSearch', (e) => e.prepareSearch()],
];
for (const [i, [name, prepare]] of prepares.entries()) {
  const times: number[] = [];
  const after: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const e = await lib.Engine.open();
    let t = performance.now();
    prepare(e);
    times.push(performance.now() - t);
    // the first call after it; it also waits for what prepareSearch left running on a
    // background thread, which would otherwise compete with the next round
    t = performance.now();
    calls[i]?.[1](e);
    after.push(performance.now() - t);
    e.close();
  }
  console.log(
    `${name} after open: median ${fmt(median(times))}; then the first ${calls[i]?.[0]}: ${fmt(median(after))}`,
  );
}
