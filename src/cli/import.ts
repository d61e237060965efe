/**
 * `whereabouts import`: streams station exports into a database directory, and address files
 * (OpenAddresses CSV, OpenStreetMap .osm.pbf; told apart by content) into its address file.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ADDRESS_FILE_NAME } from '../geocoding/addresses.js';
import { native } from '../native/binding.js';
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
  for (const f of positionals) if (f !== '-' && !existsSync(f)) throw new Error(`no such file: ${f}`);
  const { importFiles, importAddresses, addressFileKind } = native();
  if (!importFiles || !importAddresses || !addressFileKind)
    throw new Error('this build of the native addon has no importer');
  // Telling an address file apart reads its first bytes: a pipe would lose them, so a pipe
  // is taken for a station export (which the importer reads from a pipe as from a file).
  const addressFiles = positionals.filter(
    (f) => f !== '-' && statSync(f).isFile() && addressFileKind(f) !== null,
  );
  const stationFiles = positionals.filter((f) => !addressFiles.includes(f));
  if (stationFiles.length > 0) await importStations(values.db, stationFiles, values, importFiles);
  if (addressFiles.length > 0) {
    const progress = progressReporter(Boolean(values.quiet));
    const out = join(values.db, ADDRESS_FILE_NAME);
    const report = (await importAddresses(
      out,
      addressFiles,
      { replace: Boolean(values.replace) },
      progress.onProgress,
    )) as AddressImportReport;
    progress.done();
    writeFileOutcomes(report.files);
    process.stderr.write(
      `addresses ${out}: ${report.addresses.toLocaleString('en')} addresses, ${report.roads.toLocaleString('en')} roads, ` +
        `${report.mergedDuplicates.toLocaleString('en')} duplicates merged, ${(report.bytes / 1e6).toFixed(1)} MB, ` +
        `${report.seconds.toFixed(1)} s (${rate(report).toLocaleString('en')} rows/s)\n`,
    );
  }
  return 0;
}

/** The address import report (from the core). */
interface AddressImportReport {
  files: FileOutcome[];
  addresses: number;
  roads: number;
  mergedDuplicates: number;
  bytes: number;
  seconds: number;
}

function rate(report: { files: FileOutcome[]; seconds: number }): number {
  return report.seconds > 0 ? Math.round(report.files.reduce((s, f) => s + f.rows, 0) / report.seconds) : 0;
}

async function importStations(
  db: string,
  files: string[],
  values: { replace?: boolean; simulated?: boolean; 'sqlite-radio'?: string; quiet?: boolean },
  importFiles: NonNullable<ReturnType<typeof native>['importFiles']>,
): Promise<void> {
  const progress = progressReporter(Boolean(values.quiet));
  const report = (await importFiles(
    db,
    files,
    {
      replace: Boolean(values.replace),
      simulated: Boolean(values.simulated),
      sqliteRadio: values['sqlite-radio'],
    },
    progress.onProgress,
  )) as ImportReport;
  progress.done();
  writeFileOutcomes(report.files);
  process.stderr.write(
    `database ${db}: ${report.cells.toLocaleString('en')} cells, ${report.wifi.toLocaleString('en')} WiFi APs, ` +
      `${report.mergedDuplicates.toLocaleString('en')} duplicates merged, ${report.shards} shard(s), ` +
      `${(report.bytes / 1e6).toFixed(1)} MB, ${report.seconds.toFixed(1)} s (${rate(report).toLocaleString('en')} rows/s)` +
      (report.peakRssBytes ? `, peak RSS ${(report.peakRssBytes / 1e6).toFixed(0)} MB` : '') +
      '\n',
  );
}
