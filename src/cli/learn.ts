/**
 * `whereabouts learn`: learns station positions from GPS-tagged observation files
 * (OpenCelliD measurements, G-NetTrack exports, WiGLE CSV) into a database directory.
 */
import { existsSync } from 'node:fs';
import { type NativeBinding, native } from '../native/binding.js';
import { progressReporter, writeFileOutcomes } from './report.js';
import { parseFlags, UsageError } from './usage.js';

/** The native learner (`learnFiles` of the binding). */
export function nativeLearn(): NativeBinding['learnFiles'] {
  return native().learnFiles;
}

function code(name: string, text: string | undefined, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new UsageError(`--${name} must be an integer 0..${max}`);
  return n;
}

export async function runLearn(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    mcc: { type: 'string' },
    mnc: { type: 'string' },
    'block-days': { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (!values.db) throw new UsageError('learn needs --db DIR');
  if (positionals.length === 0) throw new UsageError('learn needs at least one FILE');
  const mcc = code('mcc', values.mcc, 999);
  const mnc = code('mnc', values.mnc, 32767);
  if ((mcc === undefined) !== (mnc === undefined)) throw new UsageError('give --mcc and --mnc together');
  let blockDays: number | undefined;
  if (values['block-days'] !== undefined) {
    blockDays = Number(values['block-days']);
    if (!Number.isFinite(blockDays) || blockDays < 0)
      throw new UsageError('--block-days must be a number >= 0');
  }
  for (const f of positionals) if (f !== '-' && !existsSync(f)) throw new Error(`no such file: ${f}`);

  const progress = progressReporter(Boolean(values.quiet));
  const report = await nativeLearn()(values.db, positionals, { mcc, mnc, blockDays }, progress.onProgress);
  progress.done();
  const learned = report.counts;
  const n = (x: number) => x.toLocaleString('en');
  writeFileOutcomes(
    report.files.map((f) => ({ ...f, kind: f.format })),
    'skipped (not WiFi, or _nomap)',
  );
  process.stderr.write(
    `learned from ${n(learned.observations)} observations (${n(learned.outliers)} dropped as inconsistent): ` +
      `${n(learned.added)} stations added, ${n(learned.refined)} refined, ${n(learned.moved)} moved, ` +
      `${n(learned.relearned)} re-learned after a move, ${n(learned.blocked)} withdrawn (blocklisted)\n` +
      `database ${values.db}: ${n(report.cells)} cells, ${n(report.wifi)} WiFi APs, ${report.shards} shard(s), ` +
      `${(report.bytes / 1e6).toFixed(1)} MB, ${learned.seconds.toFixed(1)} s\n`,
  );
  return 0;
}
