/** The seed ranges that the benches' flags give for their simulated worlds. */
import { basename } from 'node:path';

/**
 * The inclusive range `A..B` (or the one seed `A`) that `flag` gives in `text`, at most `max`
 * seeds. A missing or malformed range ends the bench with exit code 2 and says why.
 */
export function seedRange(flag: string, text: string | undefined, max = 1000): number[] {
  const fail = (message: string): never => {
    process.stderr.write(`bench/${basename(process.argv[1] ?? '')}: ${flag}: ${message}\n`);
    process.exit(2);
  };
  if (text === undefined) return fail('A..B is required');
  const m = /^(\d+)(?:\.\.(\d+))?$/.exec(text.trim());
  if (!m) return fail(`\`${text}\` is not a seed range A..B`);
  const a = Number(m[1]);
  const b = Number(m[2] ?? m[1]);
  if (b < a) fail(`\`${text}\` ends before it starts`);
  if (b - a >= max) fail(`\`${text}\` has more than ${max} seeds`);
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}
