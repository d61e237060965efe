/**
 * Files that hold secrets or personal data (tokens.sqlite: tokens; observations.sqlite and
 * learned.sqlite: token hashes, device ids, GPS fixes) are kept readable by their owner only.
 */
import { chmodSync, closeSync, openSync, statSync } from 'node:fs';

/**
 * Takes group and other permissions away from `file` and its SQLite `-wal` and `-shm`
 * companions where they have any (a file created before this rule, or under a loose umask).
 * A file that is missing is skipped; one that cannot be changed (another owner) is reported
 * as a process warning, not an error: the service still works.
 */
export function keepPrivate(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    let mode: number;
    try {
      mode = statSync(f).mode;
    } catch {
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    try {
      chmodSync(f, mode & 0o700);
    } catch (err) {
      process.emitWarning(
        `${f} is readable by other users and could not be made private: ${(err as Error).message}`,
      );
    }
  }
}

/**
 * Prepares the SQLite database `file` to be opened as a private file: creates it empty with
 * mode 0600 when it does not exist (SQLite takes an empty file as a new database, and gives
 * its -wal and -shm files the database's mode), so that it is never readable by others, not
 * even between its creation and a chmod; then {@link keepPrivate}.
 */
export function preparePrivateDatabase(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  keepPrivate(file);
}
