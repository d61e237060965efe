/**
 * Writing a station database of an older store format again in the current one, from its own
 * stations (docs/import.md, "Store formats"): what `whereabouts upgrade` runs, for programs
 * that ship or keep a database across versions of this package. A database can hold stations
 * no source file holds any more (learned ones folded in by compaction, a sync's pages), so
 * re-importing the sources is not the only way past a format change.
 */
import { existsSync } from 'node:fs';
import { native } from './native/binding.js';

/** Progress of {@link upgradeDatabase}: `done` of `total` stations written so far. */
export interface UpgradeProgress {
  /** `Merging` while stations are read and written, `Writing` while the files are finished. */
  phase: string;
  done: number;
  total: number;
}

/** Options of {@link upgradeDatabase}. */
export interface UpgradeOptions {
  /** The station database directory. */
  db: string;
  onProgress?: (p: UpgradeProgress) => void;
}

/** What {@link upgradeDatabase} did. */
export interface UpgradeOutcome {
  /** The store format the database was in. */
  fromFormat: number;
  /** False when it was current already: nothing was written. */
  upgraded: boolean;
  cells: number;
  wifi: number;
  shards: number;
  bytes: number;
  seconds: number;
}

/**
 * Writes the station database in `options.db` again in the store format this build reads, when
 * it is of an older one (5 or later; older ones are refused with the re-import message). Like an
 * import it writes aside and switches the manifest last: a failed or interrupted upgrade leaves
 * the old database. A current database is left alone, after reading its manifest only, so a
 * program may call this before every {@link Engine.open}.
 *
 * @example
 * ```ts
 * import { Engine, upgradeDatabase } from 'whereabouts';
 * // Before opening a database kept across versions of this package (a no-op when current):
 * const up = await upgradeDatabase({ db: './stations' });
 * console.log(up.upgraded, up.fromFormat); // prints: false 8
 * const engine = await Engine.open({ db: './stations' });
 * engine.close();
 * ```
 */
export async function upgradeDatabase(options: UpgradeOptions): Promise<UpgradeOutcome> {
  const { db, onProgress } = options;
  if (!existsSync(db)) throw new Error(`${db}: no such directory`);
  const { upgradeDatabase: upgrade } = native();
  if (!upgrade) throw new Error('this build of the native addon cannot upgrade databases');
  const r = (await upgrade(db, (p) =>
    onProgress?.({ phase: p.phase, done: p.rows, total: p.bytesTotal }),
  )) as Omit<UpgradeOutcome, 'upgraded'>;
  return { ...r, upgraded: r.shards > 0 };
}
