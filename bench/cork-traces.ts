/**
 * The Cork drive tests (`../shared/data/ucc-5g-cork`, never copied into the repository) as the
 * benches read them: the zip unpacked into a working directory, its trace files listed in one
 * order, so that "every fourth file held out" means the same files in every bench.
 */
import { execFileSync } from 'node:child_process';
import { expandInputs } from '../src/eval/inputs.js';

/** Unpacks `zip` into `dir` (the __MACOSX copies and .DS_Store skipped) and returns its CSV trace files, sorted by path. */
export function unpackCorkTraces(zip: string, dir: string): string[] {
  execFileSync('unzip', ['-q', zip, '-d', dir, '-x', '__MACOSX/*', '*/.DS_Store'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return expandInputs([dir])
    .filter((f) => f.endsWith('.csv'))
    .sort();
}
