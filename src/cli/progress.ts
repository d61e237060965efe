/**
 * A progress line for long work: a bar with rows/s on a terminal, a plain line every few
 * seconds when standard error is a file or a pipe (CI logs stay readable).
 */

/** One progress reading. */
export interface ProgressReading {
  label: string;
  done: number;
  total: number;
  rows: number;
  phase: string;
  /**
   * `bytes` (downloads): `done` and `total` are bytes, and the line shows megabytes, the rate
   * given in `bytesPerSecond` and the time left instead of rows. Rows show the time left too
   * when `etaSeconds` is given.
   */
  unit?: 'rows' | 'bytes';
  bytesPerSecond?: number;
  etaSeconds?: number;
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

function duration(seconds: number): string {
  const s = Math.round(seconds);
  return s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

const LOG_EVERY_MS = 5000;

/** Renders progress readings to a stream. */
export class ProgressLine {
  readonly #out: NodeJS.WriteStream;
  readonly #tty: boolean;
  readonly #started = Date.now();
  #lastLog = 0;
  #drawn = false;

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.#out = out;
    this.#tty = Boolean(out.isTTY);
  }

  update(p: ProgressReading): void {
    const now = Date.now();
    const secs = Math.max((now - this.#started) / 1000, 1e-3);
    const rate = Math.round(p.rows / secs);
    const pct = p.total > 0 ? Math.min(100, (100 * p.done) / p.total) : 0;
    const text =
      p.unit === 'bytes'
        ? `${p.label} ${p.phase.toLowerCase()} ${p.total > 0 ? `${pct.toFixed(1)}% ` : ''}${mb(p.done)}${p.total > 0 ? ` of ${mb(p.total)}` : ''} MB ` +
          `${mb(p.bytesPerSecond ?? 0)} MB/s${p.etaSeconds === undefined ? '' : ` ${duration(p.etaSeconds)} left`}`
        : `${p.label} ${p.phase.toLowerCase()} ${p.total > 0 ? `${pct.toFixed(1)}% ` : ''}${p.rows.toLocaleString('en')} rows ${rate.toLocaleString('en')} rows/s` +
          (p.etaSeconds === undefined ? '' : ` ${duration(p.etaSeconds)} left`);
    if (this.#tty) {
      // an input of unknown length (a pipe) gets no bar: there is no share to show
      const width = 24;
      const filled = Math.round((pct / 100) * width);
      const bar = p.total > 0 ? `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ` : '';
      this.#out.write(`\r${bar}${text}\x1b[K`);
      this.#drawn = true;
    } else if (now - this.#lastLog >= LOG_EVERY_MS) {
      this.#lastLog = now;
      this.#out.write(`${text}\n`);
    }
  }

  done(): void {
    if (this.#drawn) this.#out.write('\n');
    this.#drawn = false;
  }
}
