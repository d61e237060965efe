/**
 * The simulator worlds the benches evaluate on: `.eval/sim-SEED-REQUESTS/` holds the world the
 * simulator wrote (`world/`) and its stations imported (`db/`); src/eval/sim.ts makes them.
 */
import { join } from 'node:path';
import { simWorld as make, type SimWorld } from '../src/eval/sim.js';

export type { SimWorld };

const root = join(import.meta.dirname, '..');

/**
 * The world of `seed` with `requests` requests a scenario, written and imported afresh, or,
 * with `reuse`, the one already there while this build still opens its database.
 * `separateMasts`: the simulator's share of masts whose LTE and NR stand apart from GSM and
 * UMTS (`--separate-masts`), in a directory of its own.
 */
export async function simWorld(
  seed: string,
  requests: string,
  reuse: boolean,
  separateMasts = '0',
): Promise<SimWorld> {
  const separate = Number(separateMasts) > 0 ? `-sep${separateMasts}` : '';
  return make(
    join(root, '.eval', `sim-${seed}-${requests}${separate}`),
    seed,
    requests,
    reuse,
    separateMasts,
  );
}
