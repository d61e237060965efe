/**
 * Progress of a running sync, as the CLI draws it and `engine.syncState()` reports it.
 */

/** One reading: bytes while downloading, stations while importing. */
export interface SyncProgress {
  phase: 'download' | 'import';
  /** The URL or file being worked on (never with a token in it). */
  label: string;
  /** Bytes (download) or rows (import) done so far, and the total when known (else 0). */
  done: number;
  total: number;
  /** Bytes per second of this attempt (download) or rows per second (import). */
  rate: number;
  /** Seconds left at the current rate, when the total is known. */
  etaSeconds?: number;
}
