/**
 * `whereabouts eval` throughput beside `whereabouts locate --jsonl` on the same requests: the
 * harness on a simulated world (all its scenarios, each `--requests` rows) and on the Cork
 * traces (learned with --split files), each a child process of the built CLI, timed from start
 * to exit.
 *
 *   npx tsx bench/eval.ts [--requests N] [--seed N] [--zip PATH]
 *
 * Cork is read from ../shared/data/ucc-5g-cork (GPL-3.0, never copied here); without it that
 * part is left out with a message.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SIM_NOW } from '../src/eval/sim.js';
import { simWorld } from './sim-world.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '100000' },
    seed: { type: 'string', default: '1' },
    zip: { type: 'string' },
  },
});
const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'whereabouts.js');
const work = mkdtempSync(join(tmpdir(), 'whereabouts-bench-eval-'));

/** Runs the CLI; seconds from start to exit. */
function timed(args: string[], out = 'ignore'): number {
  const t = process.hrtime.bigint();
  execFileSync('node', [bin, ...args], { stdio: ['ignore', out === 'ignore' ? 'ignore' : 'pipe', 'ignore'] });
  return Number(process.hrtime.bigint() - t) / 1e9;
}

try {
  const world = await simWorld(values.seed as string, values.requests as string, true);
  const requests = join(work, 'requests.jsonl');
  let n = 0;
  const lines: string[] = [];
  for (const f of world.scenarios)
    for (const l of readFileSync(f, 'utf8').split('\n'))
      if (l.trim() !== '') {
        lines.push(JSON.stringify((JSON.parse(l) as { request: unknown }).request));
        n++;
      }
  writeFileSync(requests, `${lines.join('\n')}\n`);
  lines.length = 0;
  const rows: Record<string, string | number>[] = [];
  const rate = (rowsN: number, s: number) => Math.round(rowsN / s).toLocaleString('en');
  const evalS = timed(['eval', '--quiet', '--db', world.db, '--now', String(SIM_NOW), ...world.scenarios]);
  const locS = timed(['locate', '--jsonl', '--db', world.db, '--now', String(SIM_NOW), requests]);
  rows.push({
    input: `simulator seed ${values.seed}, ${world.scenarios.length} scenarios`,
    requests: n,
    'eval s': evalS.toFixed(2),
    'eval req/s': rate(n, evalS),
    'locate --jsonl s': locS.toFixed(2),
    'locate req/s': rate(n, locS),
    'eval / locate time': (evalS / locS).toFixed(2),
  });

  const zip = values.zip ?? join(root, '..', 'shared', 'data', 'ucc-5g-cork', '5G-production-dataset.zip');
  if (existsSync(zip)) {
    const traces = join(work, 'cork');
    execFileSync('unzip', ['-q', zip, '-d', traces, '-x', '__MACOSX/*', '*/.DS_Store']);
    const reqFile = join(work, 'cork-requests.jsonl');
    const t = process.hrtime.bigint();
    const out = execFileSync('node', [
      bin,
      'eval',
      '--quiet',
      '--json',
      '--split',
      'files',
      '--mcc',
      '272',
      '--mnc',
      '1',
      '--requests-out',
      reqFile,
      traces,
    ]);
    const corkS = Number(process.hrtime.bigint() - t) / 1e9;
    const corkN = (JSON.parse(out.toString('utf8')) as { rows: number }).rows;
    // locate on the demo database: the same requests and the same parsing, not the learned stations.
    const locC = timed(['locate', '--jsonl', reqFile]);
    rows.push({
      input: 'Cork traces, --split files (learning included)',
      requests: corkN,
      'eval s': corkS.toFixed(2),
      'eval req/s': rate(corkN, corkS),
      'locate --jsonl s': locC.toFixed(2),
      'locate req/s': rate(corkN, locC),
      'eval / locate time': (corkS / locC).toFixed(2),
    });
  } else process.stderr.write(`bench/eval.ts: no Cork traces at ${zip}; that part is left out\n`);
  console.log(
    'whereabouts eval beside whereabouts locate --jsonl on the same requests (wall time of each process)',
  );
  console.table(rows);
} finally {
  rmSync(work, { recursive: true, force: true });
}
