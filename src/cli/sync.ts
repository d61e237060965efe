/**
 * `whereabouts sync`: brings a station database up to date from an export or another
 * Whereabouts server (docs/sync.md).
 */
import { redactUrl } from '../server/auth.js';
import { syncDatabase } from '../sync/run.js';
import { ProgressLine } from './progress.js';
import { writeFileOutcomes } from './report.js';
import { parseFlags, UsageError } from './usage.js';

/** Environment variable read for the token when `--token` is absent (keeps it out of `ps`). */
const TOKEN_ENV = 'WHEREABOUTS_SYNC_TOKEN';

export async function runSync(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    from: { type: 'string' },
    token: { type: 'string' },
    sha256: { type: 'string' },
    attempts: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (!values.db) throw new UsageError('sync needs --db DIR');
  if (!values.from) throw new UsageError('sync needs --from URL (an export, or a Whereabouts server)');
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  let attempts: number | undefined;
  if (values.attempts !== undefined) {
    attempts = Number(values.attempts);
    if (!Number.isInteger(attempts) || attempts < 1)
      throw new UsageError('--attempts must be a whole number from 1');
  }
  if (values.sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(values.sha256))
    throw new UsageError('--sha256 must be 64 hex digits');
  const line = new ProgressLine();
  const outcome = await syncDatabase({
    db: values.db,
    from: values.from,
    token: values.token ?? process.env[TOKEN_ENV],
    sha256: values.sha256,
    attempts,
    onProgress: (p) => {
      if (values.quiet) return;
      line.update({
        label: redactUrl(p.label),
        phase: p.phase,
        done: p.done,
        total: p.total,
        rows: p.done,
        unit: p.phase === 'download' ? 'bytes' : 'rows',
        bytesPerSecond: p.rate,
        etaSeconds: p.etaSeconds,
      });
    },
  });
  line.done();
  if (outcome.rejected > 0) {
    const byFile = new Map<string, { line: number; reason: string }[]>();
    for (const b of outcome.badLines) byFile.set(b.file, [...(byFile.get(b.file) ?? []), b]);
    writeFileOutcomes(
      [...byFile].map(([file, badLines]) => ({
        file,
        kind: 'rejected rows',
        rows: badLines.length,
        accepted: 0,
        rejected: badLines.length,
        badLines,
      })),
    );
  }
  const what = outcome.source === 'server' ? 'server' : 'export';
  process.stderr.write(
    outcome.changed
      ? `sync ${values.db} from ${what}: ${outcome.stations.toLocaleString('en')} stations ` +
          (outcome.masts > 0 ? `and ${outcome.masts.toLocaleString('en')} learned masts ` : '') +
          (outcome.levels > 0
            ? `and ${outcome.levels.toLocaleString('en')} cells' levels and advances `
            : '') +
          'imported ' +
          `(${outcome.rejected.toLocaleString('en')} rows rejected), generation ${outcome.generation}, ` +
          `${(outcome.bytes / 1e6).toFixed(1)} MB downloaded, ${outcome.seconds.toFixed(1)} s\n`
      : `sync ${values.db} from ${what}: nothing new, database unchanged\n`,
  );
  return 0;
}
