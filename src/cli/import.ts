/**
 * `whereabouts import`: streams station exports into a database directory.
 */
import { existsSync } from 'node:fs';
import { native } from '../native.js';
import { type FileOutcome, progressReporter, writeFileOutcomes } from './report.js';
import { parseFlags, UsageError } from './usage.js';

/** The import report (from the core). */
interface ImportReport {
  files: FileOutcome[];
  cells: number;
  wifi: number;
  mergedDuplicates: number;
  shards: number;
  bytes: number;
  seconds: number;
  peakRssBytes?: number | null;
}

export async function runImport(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    replace: { type: 'boolean' },
    simulated: { type: 'boolean' },
    'sqlite-radio': { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (!values.db) throw new UsageError('import needs --db DIR');
  if (positionals.length === 0) throw new UsageError('import needs at least one FILE');
  for (const f of positionals) if (!existsSync(f)) throw new Error(`no such file: ${f}`);
  const importFiles = native().importFiles;
  if (!importFiles) throw new Error('this build of the native addon has no importer');

  const progress = progressReporter(Boolean(values.quiet));
  const report = (await importFiles(
    values.db,
    positionals,
    {
      replace: Boolean(values.replace),
      simulated: Boolean(values.simulated),
      sqliteRadio: values['sqlite-radio'],
    },
    progress.onProgress,
  )) as ImportReport;
  progress.done();
  writeFileOutcomes(report.files);
  const rate =
    report.seconds > 0 ? Math.round(report.files.reduce((s, f) => s + f.rows, 0) / report.seconds) : 0;
  process.stderr.write(
    `database ${values.db}: ${report.cells.toLocaleString('en')} cells, ${report.wifi.toLocaleString('en')} WiFi APs, ` +
      `${report.mergedDuplicates.toLocaleString('en')} duplicates merged, ${report.shards} shard(s), ` +
      `${(report.bytes / 1e6).toFixed(1)} MB, ${report.seconds.toFixed(1)} s (${rate.toLocaleString('en')} rows/s)` +
      (report.peakRssBytes ? `, peak RSS ${(report.peakRssBytes / 1e6).toFixed(0)} MB` : '') +
      '\n',
  );
  return 0;
}
