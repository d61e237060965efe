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
 * held waits in SQLite's busy handler (`busy_timeout`), and retries the whole group if the wait
 * runs out; nothing of a group is written unless all of it is.
 */
import type { Database } from 'better-sqlite3';

/** How a {@link GroupCommit} gathers its groups. */
export interface GroupCommitOptions {
  /** Wait this long after the first item before flushing; 0 (default) = the next event-loop turn. */
  delayMs?: number;
  /** Most items in one transaction, to bound how long one flush holds the lock and the event loop. */
  maxBatch?: number;
  /** Retries of a group whose `BEGIN IMMEDIATE` timed out on a busy database (default 20). */
  busyRetries?: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/** Applies items in groups, one transaction per group; see the module comment. */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private scheduled = false;
  private closed = false;
  private readonly delayMs: number;
  private readonly maxBatch: number;
  private readonly busyRetries: number;
  private readonly run: (items: I[]) => O[];

  /**
   * @param db the connection that writes (its `busy_timeout` decides how long a flush waits for the lock)
   * @param apply applies the items inside the transaction and returns one result per item, in order
   */
  constructor(
    private readonly db: Database,
    apply: (items: I[]) => O[],
    options: GroupCommitOptions = {},
  ) {
    this.delayMs = options.delayMs ?? 0;
    this.maxBatch = options.maxBatch ?? 4096;
    this.busyRetries = options.busyRetries ?? 20;
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
    if (this.delayMs > 0) setTimeout(() => this.flushAsync(0), this.delayMs);
    else setImmediate(() => this.flushAsync(0));
  }

  private flushAsync(attempt: number): void {
    this.scheduled = false;
    const retry = this.flushOnce(attempt);
    if (retry) {
      // The lock stayed busy for a whole busy_timeout; yield the event loop before trying again.
      this.scheduled = true;
      setTimeout(() => this.flushAsync(attempt + 1), 5 + Math.random() * 20);
    } else if (this.queue.length > 0) {
      this.schedule();
    }
  }

  /** Commits one group; true when it should be retried because the database stayed busy. */
  private flushOnce(attempt: number): boolean {
    if (this.queue.length === 0) return false;
    const group = this.queue.slice(0, this.maxBatch);
    let results: O[];
    try {
      results = this.run(group.map((p) => p.item));
    } catch (err) {
      if (isBusy(err) && attempt < this.busyRetries && !this.closed) return true;
      this.queue.splice(0, group.length);
      for (const p of group) p.reject(err);
      return false;
    }
    this.queue.splice(0, group.length);
    for (let i = 0; i < group.length; i++) (group[i] as Pending<I, O>).resolve(results[i] as O);
    return false;
  }

  /** Commits everything queued now, synchronously (used by close, and by tests). */
  flushNow(): void {
    while (this.queue.length > 0) {
      if (this.flushOnce(this.busyRetries)) break;
    }
  }

  /** Commits what is queued and refuses further items. */
  close(): void {
    this.flushNow();
    this.closed = true;
  }

  /** The connection this group commit writes through. */
  get connection(): Database {
    return this.db;
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
}
