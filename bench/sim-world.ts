/**
 * The simulator worlds the benches evaluate on: `.eval/sim-SEED-REQUESTS/` holds the world the
 * simulator wrote (`world/`) and its stations imported (`db/`); src/eval/sim.ts makes them.
 */
import { readFileSync } from 'node:fs';
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

/** The fields of a `cells.csv` row that {@link cellRowsRewritten} states anew. */
export type StatedFields = Partial<Record<'range' | 'samples' | 'changeable', number | ''>>;

/**
 * The world's `cells.csv` (in directory `world`) with each row's range, sample count or
 * `changeable` flag as `rewrite` states them from the row's operator (`net`) and its simulated
 * range and samples; a field it leaves out, or a row it returns nothing for, is kept as
 * written ('' writes an empty field: none stated).
 */
export function cellRowsRewritten(
  world: string,
  rewrite: (row: { net: string; range: number; samples: number }) => StatedFields | undefined,
): string {
  const [header, ...rows] = readFileSync(join(world, 'cells.csv'), 'utf8').split('\n');
  const cols = (header ?? '').split(',');
  const net = cols.indexOf('net');
  const at = (field: keyof StatedFields) => cols.indexOf(field);
  const out = rows.map((line) => {
    if (line.trim() === '') return line;
    const f = line.split(',');
    const stated = rewrite({
      net: f[net] ?? '',
      range: Number(f[at('range')]),
      samples: Number(f[at('samples')]),
    });
    if (!stated) return line;
    for (const [field, value] of Object.entries(stated) as [keyof StatedFields, number | ''][])
      f[at(field)] = String(value);
    return f.join(',');
  });
  return [header, ...out].join('\n');
}
