/**
 * `whereabouts upgrade --db DIR`: writes a station database of an older store format again in
 * the current one, from its own stations (docs/import.md, "Store formats"). A database can
 * hold stations no source file holds any more (learned ones folded in by compaction, a sync's
 * pages), so re-importing the sources is not the only way past a format change.
 */
import { upgradeDatabase } from '../upgrade.js';
import { progressReporter } from './report.js';
import { parseFlags, UsageError } from './usage.js';

/** Runs `whereabouts upgrade`; resolves to the exit code. */
export async function runUpgrade(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (values.db === undefined) throw new UsageError('upgrade needs --db DIR');
  if (positionals.length > 0) throw new UsageError(`upgrade takes no files (got ${positionals.join(' ')})`);
  const db = values.db;
  const progress = progressReporter(Boolean(values.quiet));
  const r = await upgradeDatabase({
    db,
    onProgress: (p) =>
      progress.onProgress({ file: db, bytesDone: p.done, bytesTotal: p.total, rows: p.done, phase: p.phase }),
  });
  progress.done();
  if (!r.upgraded) {
    process.stderr.write(`database ${db}: already store format ${r.fromFormat}, left as it is\n`);
    return 0;
  }
  const n = (x: number) => x.toLocaleString('en');
  process.stderr.write(
    `database ${db}: store format ${r.fromFormat} written again in the current one: ` +
      `${n(r.cells)} cells, ${n(r.wifi)} WiFi APs, ${r.shards} shard(s), ` +
      `${(r.bytes / 1e6).toFixed(1)} MB, ${r.seconds.toFixed(1)} s\n`,
  );
  return 0;
}
