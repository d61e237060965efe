/**
 * `DIR/sync-state.json`: what each sync source last applied, so that a re-run of an unchanged
 * export or a server with nothing new is a no-op. Written aside, synced and renamed: a crash
 * leaves the previous state or the new one, never half of either.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The file name inside the database directory. */
export const SYNC_STATE_FILE = 'sync-state.json';

/** What was last applied from one source. */
export interface SourceState {
  /** `export`: an OpenCelliD/MLS file; `server`: another Whereabouts server's `/v2/sync`. */
  kind: 'export' | 'server';
  /** HTTP validators of the applied export (local files: size and modification time as `etag`). */
  etag?: string;
  lastModified?: string;
  /** SHA-256 (hex) of the applied export file. */
  sha256?: string;
  bytes?: number;
  /** Server sources: the `until` of the last completed pull, the next pull's `since`. */
  until?: number;
  /** ISO time of the last sync that wrote a generation from this source. */
  appliedAt?: string;
  /** ISO time of the last successful check, changed or not. */
  checkedAt: string;
  /** Stations accepted and rows rejected by the last applied import. */
  stations: number;
  rejected: number;
  /** The database generation the last applied import wrote. */
  generation?: number;
}

/** The whole file: sources by URL (never with a token in it). */
export interface SyncStateFile {
  version: 1;
  sources: Record<string, SourceState>;
}

/** Reads the state of `db`; an absent file is an empty state, a corrupt one an error. */
export function readSyncState(db: string): SyncStateFile {
  const path = join(db, SYNC_STATE_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, sources: {} };
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${path} is not valid JSON; remove it to sync from scratch`);
  }
  const file = parsed as Partial<SyncStateFile>;
  if (file.version !== 1 || typeof file.sources !== 'object' || file.sources === null) {
    throw new Error(`${path} is not a sync state file this version reads; remove it to sync from scratch`);
  }
  return file as SyncStateFile;
}

/** Records the state of one source, keeping the others. */
export function writeSourceState(db: string, url: string, state: SourceState): void {
  const file = readSyncState(db);
  file.sources[url] = state;
  const path = join(db, SYNC_STATE_FILE);
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, `${JSON.stringify(file, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
