/**
 * The simulator worlds the benches evaluate on: `.eval/sim-SEED-REQUESTS/` holds the world the
 * simulator wrote (`world/`) and its stations imported with the CLI (`db/`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../src/engine.js';

const root = join(import.meta.dirname, '..');

export interface SimWorld {
  work: string;
  world: string;
  db: string;
}

/**
 * The world of `seed` with `requests` requests a scenario, written and imported afresh, or,
 * with `reuse`, the one already there while this build still opens its database (a station
 * format change makes it rebuild rather than fail). `separateMasts`: the simulator's share of
 * masts whose LTE and NR stand apart from GSM and UMTS (`--separate-masts`), in a directory of
 * its own.
 */
export async function simWorld(
  seed: string,
  requests: string,
  reuse: boolean,
  separateMasts = '0',
): Promise<SimWorld> {
  const separate = Number(separateMasts) > 0 ? `-sep${separateMasts}` : '';
  const work = join(root, '.eval', `sim-${seed}-${requests}${separate}`);
  const w = { work, world: join(work, 'world'), db: join(work, 'db') };
  if (reuse && existsSync(join(w.db, 'manifest.json')) && (await opensInThisBuild(w.db))) return w;
  rmSync(work, { recursive: true, force: true });
  const run = (cmd: string, args: string[]) =>
    execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  const world = ['world', '--seed', seed, '--requests', requests];
  if (separate) world.push('--separate-masts', separateMasts);
  run('cargo', ['run', '-q', '--release', '-p', 'whereabouts-sim', '--', ...world, '--out', w.world]);
  run('node', [
    join(root, 'bin', 'whereabouts.js'),
    'import',
    '--quiet',
    '--replace',
    '--simulated',
    '--db',
    w.db,
    join(w.world, 'cells.csv'),
    join(w.world, 'wifi.csv'),
  ]);
  return w;
}

async function opensInThisBuild(db: string): Promise<boolean> {
  try {
    (await Engine.open({ db })).close();
    return true;
  } catch (e) {
    if (/format version/.test(String(e))) return false;
    throw e;
  }
}
