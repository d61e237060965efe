/**
 * Group commit: many small writes that must each be durable before their caller goes on,
 * gathered into one SQLite transaction so that they share one commit (and one fsync).
 *
 * Callers submit items and get a promise. The first item of a group schedules a flush on the
 * next turn of the event loop (or after `delayMs`), so everything submitted meanwhile (all the
 * requests a server read from its sockets in that turn) lands in the same transaction. The
 * flush runs `BEGIN IMMEDIATE`, applies every item in order, commits, and only then resolves
 * the promises: a resolved promise means the write is in the database file's WAL.
 *
 * `BEGIN IMMEDIATE` takes SQLite's write lock before anything is read, so several processes
 * sharing the file (cluster workers) apply their groups one after another, each seeing the
 * others' committed writes: nothing is counted twice or lost. A process that finds the lock
 * held polls for it (see {@link GroupCommit}); nothing of a group is written unless all of it is.
 */
import type { Database } from 'better-sqlite3';

/** How a {@link GroupCommit} gathers its groups. */
export interface GroupCommitOptions {
  /** Wait this long after the first item before flushing; 0 (default) = the next event-loop turn. */
  delayMs?: number;
  /** Most items in one transaction, to bound how long one flush holds the lock and the event loop. */
  maxBatch?: number;
  /** How long a group may wait for another process's write lock before its callers are rejected (default 10 000 ms). */
  lockWaitMs?: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/** Polls for the lock this often while spinning: well under one commit of the process holding it. */
const POLL_MS = 0.05;
/** Longest synchronous spin for the lock before the event loop gets a turn. */
const SPIN_MS = 3;
/** After seeing the lock taken, keep a gap between own commits for this long. */
const CONTENTION_MS = 2000;
/** The gap: long enough for a polling process to take the lock in between. */
const GAP_MS = 1;

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
/** Blocks the thread for `ms` (fractions allowed); Node permits Atomics.wait on the main thread. */
function sleepSync(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

/**
 * Applies items in groups, one transaction per group; see the module comment.
 *
 * Waiting for another process's lock is done here, not by SQLite's busy handler: that handler
 * sleeps 1, 2, 5, 10 ... up to 100 ms between tries, and a process that keeps committing
 * releases the lock for well under a millisecond between its groups, so the handler's sleeper
 * was starved for seconds (measured: one of two processes got 3% of the commits, p99 2.5 s).
 * Instead a group polls every 50 µs for up to 3 ms, then yields the event loop and polls again;
 * and a process that has met contention in the last 2 s leaves 1 ms between its own commits,
 * which is when the other process's poll gets in. Commits then alternate between processes.
 */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private scheduled = false;
  private closed = false;
  private readonly delayMs: number;
  private readonly maxBatch: number;
  private readonly lockWaitMs: number;
  private readonly run: (items: I[]) => O[];
  private readonly busyTimeout: number;
  private contendedUntil = 0;
  private lastCommit = 0;
  private waitingSince: number | undefined;

  /**
   * @param db the connection that writes
   * @param apply applies the items inside the transaction and returns one result per item, in order
   */
  constructor(
    private readonly db: Database,
    apply: (items: I[]) => O[],
    options: GroupCommitOptions = {},
  ) {
    this.delayMs = options.delayMs ?? 0;
    this.maxBatch = options.maxBatch ?? 4096;
    this.lockWaitMs = options.lockWaitMs ?? 10_000;
    this.busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
    const tx = db.transaction(apply);
    this.run = (items) => tx.immediate(items);
  }

  /** Queues one item; resolves with its result once its transaction has committed. */
  submit(item: I): Promise<O> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Items waiting for a commit. */
  get pending(): number {
    return this.queue.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const now = performance.now();
    const gap = now < this.contendedUntil ? this.lastCommit + GAP_MS - now : 0;
    const wait = Math.max(this.delayMs, gap);
    if (wait > 0) setTimeout(() => this.flushAsync(), wait);
    else setImmediate(() => this.flushAsync());
  }

  private flushAsync(): void {
    this.scheduled = false;
    if (this.flushOnce(SPIN_MS)) {
      // Still locked by another process: let the event loop run (more items join the group), then poll again.
      this.scheduled = true;
      setImmediate(() => this.flushAsync());
    } else if (this.queue.length > 0) {
      this.schedule();
    }
  }

  /**
   * Commits one group, polling for the write lock for up to `spinMs`; true when the lock is
   * still taken and the group should be tried again later.
   */
  private flushOnce(spinMs: number): boolean {
    if (this.queue.length === 0) return false;
    const group = this.queue.slice(0, this.maxBatch);
    const items = group.map((p) => p.item);
    const start = performance.now();
    let results: O[] | undefined;
    let failure: unknown;
    // Fail fast on a taken lock (we poll ourselves); restored below for the owner's other statements.
    this.db.pragma('busy_timeout = 0');
    try {
      for (;;) {
        try {
          results = this.run(items);
          break;
        } catch (err) {
          if (!isBusy(err)) {
            failure = err;
            break;
          }
          const now = performance.now();
          this.contendedUntil = now + CONTENTION_MS;
          this.waitingSince ??= start;
          if (now - this.waitingSince > this.lockWaitMs) {
            failure = err;
            break;
          }
          if (now - start > spinMs) return true;
          sleepSync(POLL_MS);
        }
      }
    } finally {
      this.db.pragma(`busy_timeout = ${this.busyTimeout}`);
    }
    this.waitingSince = undefined;
    this.lastCommit = performance.now();
    this.queue.splice(0, group.length);
    if (results === undefined) for (const p of group) p.reject(failure);
    else for (let i = 0; i < group.length; i++) (group[i] as Pending<I, O>).resolve(results[i] as O);
    return false;
  }

  /** Commits everything queued now, synchronously (used by close). */
  flushNow(): void {
    while (this.queue.length > 0) this.flushOnce(this.lockWaitMs);
  }

  /** Commits what is queued and refuses further items. */
  close(): void {
    this.flushNow();
    this.closed = true;
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT';
}
