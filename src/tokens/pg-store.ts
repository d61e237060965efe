/**
 * Tokens, daily balances, rate limits and device slots in PostgreSQL, shared by several servers
 * (docs/deploy.md). The same rules as the SQLite {@link TokenStore}; what differs is how they
 * hold across machines:
 *
 * - Charges, admissions and hits are gathered per event-loop turn (or `groupMs`) into one
 *   transaction, which first locks the rows of the tokens involved (`SELECT ... ORDER BY token
 *   FOR UPDATE`: every server locks in the same order, so batches never deadlock). Every write
 *   to a token's usage, windows and devices happens under that lock, so concurrent batches from
 *   any number of servers apply one after another: no charge is counted twice or lost, and no
 *   balance is overspent. A promise resolves only after COMMIT returned, so a charge a response
 *   reports is durable (PostgreSQL's own `synchronous_commit`) before the response leaves; a
 *   batch that fails rolls back whole and its callers reject. A batch is two round trips (BEGIN
 *   with the lock and the reads; the writes with COMMIT); the rule between them is
 *   {@link applyJob}, the SQLite store's too. Admissions that write nothing (tokens without rate
 *   limits) are answered from one read without a lock or a commit.
 * - Nothing waits without bound: connecting, every query and a transaction left idle (a server
 *   cut off by the network) are limited in time, and a failure that says the database is
 *   unreachable, shutting down, overloaded or too slow rejects with
 *   {@link StoreUnavailableError}. A failed batch is never retried: a retry could charge twice.
 *   The one failure whose outcome is unknown, a connection lost while COMMIT was on its way, is
 *   resolved by asking the database whether the batch's transaction committed
 *   (`txid_status`) once it answers again: committed, the callers get their results; aborted,
 *   they reject; still unknown after `resolveMs`, they reject, and those charges may stand
 *   while their requests were refused (the only case where a charge and an answer disagree).
 *   The batches behind such a batch do not wait for its answer.
 * - `get` is synchronous (authorization runs on every request): it answers from an in-memory
 *   copy of the tokens table, loaded at open, updated at once for this store's own changes,
 *   by LISTEN/NOTIFY for other servers' changes (milliseconds), and by a full reload every
 *   `reloadMs` in case a notification was missed while the listening connection was down.
 *   Charges never trust the copy: they read the locked row.
 * - The schema is versioned in `whereabouts_schema`; migrations run at open under a session
 *   advisory lock, so servers starting together migrate once; a database migrated by a newer
 *   build is refused with an error that says so.
 */
import pg from 'pg';
import { migrate, PG_TYPES } from '../pg/migrate.js';
import { maskToken } from './mask.js';
import { StoreUnavailableError, type TokenStorage } from './storage.js';
import {
  type AdmitOutcome,
  applyInput,
  applyJob,
  type ChargeOutcome,
  chargeArgumentError,
  fromRow,
  type Job,
  type JobResult,
  type LimitRow,
  type MeteredService,
  type MeteringState,
  newRecord,
  perDay,
  TokenError,
  type TokenInput,
  type TokenRecord,
  type TokenRow,
  toRow,
  utcDay,
} from './store.js';

/** Options of {@link PgTokenStore.open}. */
export interface PgTokenStoreOptions {
  /** The clock, in ms since the epoch (tests move it across midnight). */
  now?: () => number;
  /** Gather charges for this long before committing (default 0: the next event-loop turn). */
  groupMs?: number;
  /** Most jobs in one transaction (default 500). */
  maxBatch?: number;
  /**
   * Most batches committing at once (default 1): what arrives meanwhile waits and goes in the
   * next batch, so that under load batches grow instead of queueing on the row locks of a busy
   * token (every batch of a token applies one after another anyway).
   */
  maxInFlight?: number;
  /** Connections in the pool (default 10); the LISTEN connection is one more. */
  poolSize?: number;
  /** Full reload of the in-memory token copy this often (default 5000 ms). */
  reloadMs?: number;
  /** How long to wait for a connection before failing (default 5000 ms). */
  connectTimeoutMs?: number;
  /**
   * How long one query may take before it fails (default 5000 ms): the client gives up and the
   * server cancels the statement (`statement_timeout`); a session idle inside a transaction for
   * twice as long is ended by the server (`idle_in_transaction_session_timeout`), so the row
   * locks of a server cut off by the network do not stop the others for long.
   */
  queryTimeoutMs?: number;
  /** How long a batch whose COMMIT outcome is unknown waits to learn it (default 5000 ms). */
  resolveMs?: number;
}

/** Schema migrations, in order: the schema version is how many have been applied. Never edit one; append. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE tokens (
     token text PRIMARY KEY,
     label text,
     active integer NOT NULL DEFAULT 1,
     geolocation_per_day bigint NOT NULL,
     geocoding_per_day bigint NOT NULL,
     per_second bigint,
     per_minute bigint,
     scopes text NOT NULL DEFAULT '[]',
     referrers text NOT NULL DEFAULT '[]',
     ips text NOT NULL DEFAULT '[]',
     services text NOT NULL DEFAULT '[]',
     slots bigint,
     gps integer NOT NULL DEFAULT 0,
     created_at bigint NOT NULL,
     updated_at bigint NOT NULL
   );
   CREATE TABLE token_usage (
     token text NOT NULL,
     day integer NOT NULL,
     service text NOT NULL,
     used bigint NOT NULL,
     PRIMARY KEY (token, day, service)
   );
   CREATE TABLE token_devices (
     token text NOT NULL,
     day integer NOT NULL,
     device_id text NOT NULL,
     PRIMARY KEY (token, day, device_id)
   );
   CREATE TABLE token_rate (
     token text NOT NULL,
     bucket text NOT NULL,
     win bigint NOT NULL,
     hits bigint NOT NULL,
     PRIMARY KEY (token, bucket)
   );`,
];

/** The token schema version this build writes. */
export const PG_TOKENS_SCHEMA_VERSION = MIGRATIONS.length;
/** The NOTIFY channel of token changes; the payload is the token. */
const CHANNEL = 'whereabouts_tokens';
/** bigint columns as numbers (shared with the other PostgreSQL stores). */
const TYPES = PG_TYPES;

/** Brings the schema to {@link PG_TOKENS_SCHEMA_VERSION} under an advisory lock; refuses a newer one. */
export function migrateTokens(client: pg.ClientBase): Promise<number> {
  return migrate(client, 'tokens', MIGRATIONS, 'token');
}

interface Pending {
  job: Job;
  resolve: (r: JobResult) => void;
  reject: (e: unknown) => void;
}

type LockedRow = LimitRow & { token: string; xid: string };

/** What a batch's transaction learned before COMMIT: its results and its transaction id. */
interface BatchRun {
  results?: JobResult[];
  /** Set once the batch locked a row (it writes nothing otherwise). */
  xid?: string;
}

/** COMMIT was sent and no answer came back: the transaction may or may not have committed. */
class CommitOutcomeUnknown extends Error {
  constructor(readonly lost: unknown) {
    super(`the connection was lost during COMMIT: ${(lost as Error).message}`);
  }
}

/** SQLSTATE classes of a database that cannot answer now: connection (08), resources (53), operator intervention (57: shutdown, statement timeout), system (58). */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58']);

/**
 * `err` as {@link StoreUnavailableError} when it says the database cannot answer now: a network
 * or timeout error of the driver, or a SQLSTATE of {@link UNAVAILABLE_CLASSES}. Other errors (a
 * token rule, a constraint) are returned as they are.
 */
function asUnavailable(err: unknown): unknown {
  if (err instanceof TokenError || err instanceof StoreUnavailableError || err instanceof RangeError)
    return err;
  if (err instanceof pg.DatabaseError && !UNAVAILABLE_CLASSES.has(String(err.code).slice(0, 2))) return err;
  return new StoreUnavailableError(
    `the PostgreSQL token store is unavailable: ${(err as Error).message || String(err)}`,
    { cause: err },
  );
}

/**
 * One batch's view of the locked tokens' usage, windows and devices: read once, changed in
 * memory job by job with the same rules as the SQLite store, written back before COMMIT.
 */
class BatchState {
  readonly used = new Map<
    string,
    { token: string; day: number; service: string; used: number; add: number }
  >();
  readonly rate = new Map<
    string,
    { token: string; bucket: string; win: number; hits: number; dirty: boolean }
  >();
  readonly devices = new Set<string>();
  readonly newDevices: { token: string; day: number; id: string }[] = [];

  getUsed(token: string, day: number, service: string): number {
    return this.used.get(`${token}\n${day}\n${service}`)?.used ?? 0;
  }

  addUsed(token: string, day: number, service: string, units: number): void {
    const key = `${token}\n${day}\n${service}`;
    const u = this.used.get(key);
    if (u) {
      u.used += units;
      u.add += units;
    } else this.used.set(key, { token, day, service, used: units, add: units });
  }

  windowHits(token: string, bucket: string, window: number): number {
    const r = this.rate.get(`${token}\n${bucket}`);
    return r && r.win === window ? r.hits : 0;
  }

  putRate(token: string, bucket: string, win: number, hits: number): void {
    this.rate.set(`${token}\n${bucket}`, { token, bucket, win, hits, dirty: true });
  }

  hasDevice(token: string, day: number, id: string): boolean {
    return this.devices.has(`${token}\n${day}\n${id}`);
  }

  addDevice(token: string, day: number, id: string): void {
    this.devices.add(`${token}\n${day}\n${id}`);
    this.newDevices.push({ token, day, id });
  }
}

/** Tokens, balances and limits in PostgreSQL; see the module comment. */
export class PgTokenStore implements TokenStorage {
  readonly #records = new Map<string, TokenRecord>();
  readonly #now: () => number;
  readonly #groupMs: number;
  readonly #maxBatch: number;
  readonly #resolveMs: number;
  readonly #maxInFlight: number;
  #queue: Pending[] = [];
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  /** Batches whose COMMIT's answer was lost, while the database is asked how they ended. */
  readonly #settling = new Set<Promise<void>>();
  #listener: pg.Client | undefined;
  #reloadTimer: NodeJS.Timeout | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** The last error of the database, cleared by the next success; undefined while healthy. */
  #lastError: string | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly config: pg.PoolConfig,
    options: PgTokenStoreOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#groupMs = options.groupMs ?? 0;
    this.#maxBatch = Math.max(1, options.maxBatch ?? 500);
    this.#resolveMs = options.resolveMs ?? 5000;
    this.#maxInFlight = Math.max(1, options.maxInFlight ?? 1);
  }

  /**
   * Connects to `url`, applies the schema migrations, loads the tokens and starts listening for
   * changes. Rejects when PostgreSQL cannot be reached or its schema is newer than this build's.
   */
  static async open(url: string, options: PgTokenStoreOptions = {}): Promise<PgTokenStore> {
    const queryTimeoutMs = options.queryTimeoutMs ?? 5000;
    const config: pg.PoolConfig = {
      connectionString: url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      query_timeout: queryTimeoutMs,
      statement_timeout: queryTimeoutMs,
      idle_in_transaction_session_timeout: 2 * queryTimeoutMs,
      keepAlive: true,
      types: TYPES,
      application_name: 'whereabouts',
    };
    const pool = new pg.Pool(config);
    // An idle connection that breaks (server restart) is dropped by the pool; without a
    // listener the error would end the process.
    pool.on('error', () => {});
    const store = new PgTokenStore(pool, config, options);
    try {
      const client = await pool.connect();
      let broken: Error | undefined;
      const onError = (err: Error) => {
        broken = err;
      };
      client.on('error', onError);
      try {
        await migrateTokens(client);
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
      await store.#reload();
      await store.#listen();
    } catch (err) {
      await store.close();
      throw err;
    }
    const reloadMs = options.reloadMs ?? 5000;
    store.#reloadTimer = setInterval(() => {
      store.#reload().catch(() => {});
    }, reloadMs);
    store.#reloadTimer.unref();
    return store;
  }

  /** Resolves when PostgreSQL answers a query within `timeoutMs` (default 2000); rejects otherwise. */
  async ping(timeoutMs = 2000): Promise<void> {
    const query = this.#query('SELECT 1');
    // The query may still fail after the timeout has answered: that failure is not unhandled.
    query.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`PostgreSQL did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Undefined while the database answers; else the last error (for /health). */
  get problem(): string | undefined {
    return this.#lastError;
  }

  async create(input: TokenInput): Promise<TokenRecord> {
    const record = newRecord(input, this.#now());
    const row = toRow(record);
    await this.#query(
      `WITH ins AS (
         INSERT INTO tokens (token, label, active, geolocation_per_day, geocoding_per_day, per_second,
           per_minute, scopes, referrers, ips, services, slots, gps, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING token)
       SELECT pg_notify('${CHANNEL}', token) FROM ins`,
      rowValues(row),
    );
    this.#records.set(record.token, record);
    return record;
  }

  update(token: string, patch: TokenInput): Promise<TokenRecord> {
    return this.#modify(token, (r) => applyInput(r, patch));
  }

  revoke(token: string): Promise<TokenRecord> {
    return this.#modify(token, (r) => ({ ...r, active: false }));
  }

  async #modify(token: string, change: (r: TokenRecord) => TokenRecord): Promise<TokenRecord> {
    const record = await this.#transaction(undefined, async (client) => {
      const r = await client.query<TokenRow>('SELECT * FROM tokens WHERE token = $1 FOR UPDATE', [token]);
      const row = r.rows[0];
      if (!row) throw new TokenError('NOT_FOUND', `no token ${maskToken(token)}`);
      const updated = change(fromRow(row));
      updated.updatedAt = Math.max(this.#now(), updated.createdAt);
      await client.query(
        `UPDATE tokens SET label = $2, active = $3, geolocation_per_day = $4, geocoding_per_day = $5,
           per_second = $6, per_minute = $7, scopes = $8, referrers = $9, ips = $10, services = $11,
           slots = $12, gps = $13, created_at = $14, updated_at = $15
         WHERE token = $1`,
        rowValues(toRow(updated)),
      );
      await client.query(`SELECT pg_notify('${CHANNEL}', $1)`, [token]);
      return { value: updated };
    });
    this.#records.set(token, record);
    return record;
  }

  async list(): Promise<TokenRecord[]> {
    const r = await this.#query<TokenRow>('SELECT * FROM tokens ORDER BY created_at, token');
    return r.rows.map(fromRow);
  }

  get(token: string): TokenRecord | undefined {
    return this.#records.get(token);
  }

  async balance(token: string, service: MeteredService): Promise<number> {
    const r = await this.#query<LimitRow & { used: number }>(
      `SELECT t.geolocation_per_day, t.geocoding_per_day,
         coalesce((SELECT used FROM token_usage u WHERE u.token = t.token AND u.day = $2 AND u.service = $3), 0) AS used
       FROM tokens t WHERE t.token = $1`,
      [token, utcDay(this.#now()), service],
    );
    const row = r.rows[0];
    if (!row) return 0;
    return Math.max(0, perDay(row, service) - row.used);
  }

  charge(
    token: string,
    service: MeteredService,
    options: { units?: number; deviceId?: string; admitted?: boolean } = {},
  ): Promise<ChargeOutcome> {
    const units = options.units ?? 1;
    const bad = chargeArgumentError(units, service);
    if (bad) return Promise.reject(bad);
    if (options.deviceId?.includes('\0'))
      return Promise.reject(new RangeError('a device id cannot hold NUL'));
    return this.#submit({
      kind: 'charge',
      token,
      service,
      units,
      deviceId: options.deviceId,
      admitted: options.admitted === true,
      at: this.#now(),
    }) as Promise<ChargeOutcome>;
  }

  admit(token: string, service?: MeteredService): Promise<AdmitOutcome> {
    if (service !== undefined && service !== 'geolocation' && service !== 'geocoding')
      return Promise.reject(new RangeError(`unknown metered service ${String(service)}`));
    return this.#submit({ kind: 'admit', token, service, at: this.#now() }) as Promise<AdmitOutcome>;
  }

  hit(token: string, bucket: string, perSecond: number): Promise<boolean> {
    return this.#submit({
      kind: 'hit',
      token,
      bucket: `hit:${bucket}`,
      limit: perSecond,
      windowMs: 1000,
      at: this.#now(),
    }) as Promise<boolean>;
  }

  /** Commits what is waiting, then closes the connections. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#reloadTimer);
    clearTimeout(this.#reconnectTimer);
    while (this.#queue.length > 0 || this.#inFlight.size > 0) {
      this.#flush();
      await Promise.allSettled([...this.#inFlight]);
    }
    await Promise.allSettled([...this.#settling]);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }

  #submit(job: Job): Promise<JobResult> {
    if (this.#closed) return Promise.reject(new Error('the token store is closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      if (this.#queue.length >= this.#maxBatch) this.#flush();
      else if (this.#timer === undefined)
        this.#timer =
          this.#groupMs > 0
            ? setTimeout(() => this.#flush(), this.#groupMs)
            : setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer as NodeJS.Timeout);
      clearImmediate(this.#timer as NodeJS.Immediate);
      this.#timer = undefined;
    }
    while (this.#queue.length > 0 && this.#inFlight.size < this.#maxInFlight) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      const run = this.#commit(batch).finally(() => {
        this.#inFlight.delete(run);
        // What arrived while this batch committed goes now, as one batch.
        if (this.#queue.length > 0) this.#flush();
      });
      this.#inFlight.add(run);
    }
  }

  /**
   * Answers a batch: admissions that write nothing from one read without locks, the rest in one
   * transaction (#commitLocked).
   */
  async #commit(batch: Pending[]): Promise<void> {
    const readOnly: Pending[] = [];
    const locked: Pending[] = [];
    for (const p of batch) (this.#writesNothing(p.job) ? readOnly : locked).push(p);
    const runs = [this.#commitLocked(locked)];
    if (readOnly.length > 0)
      runs.push(this.#answerUnlocked(readOnly).then((left) => this.#commitLocked(left)));
    await Promise.all(runs);
  }

  /**
   * Whether a job is expected to write nothing, by the in-memory token copy: an admission of a
   * token without per-second and per-minute limits only reads its balance (docs/tokens.md). The
   * copy may be seconds old; {@link #answerUnlocked} checks against the stored row.
   */
  #writesNothing(job: Job): boolean {
    if (job.kind !== 'admit') return false;
    const r = this.#records.get(job.token);
    return r === undefined || (r.perSecond === undefined && r.perMinute === undefined);
  }

  /**
   * Admissions by {@link applyJob} on one read of their tokens' limits and usage, without a
   * lock or a transaction (one round trip, nothing to commit): a decision that writes nothing
   * is the one the locked path would make on the same rows. Resolves to the jobs that would
   * write after all (a token given rate limits since the copy was loaded): they go the locked
   * way.
   */
  async #answerUnlocked(batch: Pending[]): Promise<Pending[]> {
    const tokens = [...new Set(batch.map((p) => p.job.token))].filter((t) => !t.includes('\0'));
    const days = [...new Set(batch.map((p) => utcDay(p.job.at)))];
    let rows: (LimitRow & {
      token: string;
      day: number | null;
      service: string | null;
      used: number | null;
    })[];
    try {
      rows = (
        await this.#query<
          LimitRow & { token: string; day: number | null; service: string | null; used: number | null }
        >(
          `SELECT t.token, t.active, t.geolocation_per_day, t.geocoding_per_day, t.per_second, t.per_minute,
             t.slots, u.day, u.service, u.used
           FROM tokens t LEFT JOIN token_usage u ON u.token = t.token AND u.day = ANY($2::int[])
           WHERE t.token = ANY($1::text[])`,
          [tokens, days],
        )
      ).rows;
    } catch (err) {
      for (const p of batch) p.reject(err);
      return [];
    }
    const limits = new Map(rows.map((r) => [r.token, r]));
    const used = new Map<string, number>();
    for (const r of rows) if (r.day !== null) used.set(`${r.token}\n${r.day}\n${r.service}`, r.used ?? 0);
    let wrote = false;
    const state: MeteringState = {
      getUsed: (token, day, service) => used.get(`${token}\n${day}\n${service}`) ?? 0,
      windowHits: () => 0,
      addUsed: () => {
        wrote = true;
      },
      putRate: () => {
        wrote = true;
      },
      hasDevice: () => false,
      addDevice: () => {
        wrote = true;
      },
    };
    const left: Pending[] = [];
    for (const p of batch) {
      wrote = false;
      const result = applyJob(state, p.job, limits.get(p.job.token));
      if (wrote) left.push(p);
      else p.resolve(result);
    }
    return left;
  }

  /** Applies a batch in one transaction; resolves its callers after COMMIT, rejects them all on failure. */
  async #commitLocked(batch: Pending[]): Promise<void> {
    if (batch.length === 0) return;
    const run: BatchRun = {};
    let results: JobResult[];
    try {
      results = await this.#applyBatch(batch, run);
    } catch (err) {
      if (err instanceof CommitOutcomeUnknown) {
        // Asking whether COMMIT took may last `resolveMs`. It goes on outside the batch's slot:
        // the batches behind it run now (refused at once while the database is down) rather
        // than wait for its answer. They cannot miscount: a batch locks its tokens' rows, so it
        // waits for this transaction, should the database still hold it, and reads what it left.
        const settling = this.#settle(batch, run, err).finally(() => this.#settling.delete(settling));
        this.#settling.add(settling);
        return;
      }
      for (const p of batch) p.reject(err);
      // What waited behind a batch the database could not take would wait as long again for
      // the same answer: it fails with it, so that nothing waits more than one time limit.
      if (err instanceof StoreUnavailableError) for (const p of this.#queue.splice(0)) p.reject(err);
      return;
    }
    batch.forEach((p, i) => {
      p.resolve(results[i] as JobResult);
    });
  }

  /**
   * Answers a batch whose COMMIT went out and whose answer was lost: with its results when the
   * transaction committed, else as unavailable.
   */
  async #settle(batch: Pending[], run: BatchRun, err: CommitOutcomeUnknown): Promise<void> {
    // A batch that locked no row wrote nothing: its results hold whatever COMMIT did.
    const outcome = run.xid === undefined ? 'committed' : await this.#outcome(run.xid);
    if (outcome === 'committed' && run.results) {
      const known = run.results;
      batch.forEach((p, i) => {
        p.resolve(known[i] as JobResult);
      });
      return;
    }
    const failure = new StoreUnavailableError(
      outcome === 'aborted'
        ? `the PostgreSQL token store is unavailable (${(err.lost as Error).message}); the batch was rolled back`
        : `the PostgreSQL token store is unavailable (${(err.lost as Error).message}); whether the batch committed is unknown`,
      { cause: err.lost },
    );
    for (const p of batch) p.reject(failure);
  }

  /**
   * Whether transaction `xid` committed, asked until the database answers or `resolveMs` has
   * passed ('unknown' then). A transaction still 'in progress' is one whose backend has not yet
   * noticed the lost connection: asked again.
   */
  async #outcome(xid: string): Promise<'committed' | 'aborted' | 'unknown'> {
    const deadline = Date.now() + this.#resolveMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return 'unknown';
      try {
        const asked = this.pool.query<{ s: string | null }>('SELECT txid_status($1::bigint) AS s', [xid]);
        asked.catch(() => {});
        let timer: NodeJS.Timeout | undefined;
        const r = await Promise.race([
          asked,
          new Promise<undefined>((resolve) => {
            timer = setTimeout(() => resolve(undefined), left);
          }),
        ]).finally(() => clearTimeout(timer));
        const status = r?.rows[0]?.s;
        if (status === 'committed' || status === 'aborted') return status;
      } catch {
        // not reachable yet
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(0, deadline - Date.now()))));
    }
  }

  /**
   * A batch in two round trips: BEGIN with the statements that lock the batch's tokens and read
   * their usage, windows and devices; then {@link applyJob} on every job in memory; then the
   * statements that write what changed with COMMIT. The reads are statements of their own after
   * the lock: each statement sees what committed before it started, so the reads see the last
   * batch that held the lock (one statement that locked and read would read from before the
   * wait).
   */
  #applyBatch(batch: Pending[], run: BatchRun): Promise<JobResult[]> {
    // A token holding NUL cannot be stored (PostgreSQL text has no NUL): it is unknown, and is
    // neither locked nor read.
    const tokens = [...new Set(batch.map((p) => p.job.token))].filter((t) => !t.includes('\0'));
    const days = [...new Set(batch.map((p) => utcDay(p.job.at)))];
    const ids = [
      ...new Set(batch.flatMap((p) => (p.job.kind === 'charge' && p.job.deviceId ? [p.job.deviceId] : []))),
    ];
    const t = textArray(tokens);
    const d = intArray(days);
    // txid_current() names the transaction, so that a COMMIT whose answer was lost can be
    // looked up afterwards (#outcome); the row locks give it an id anyway.
    const reads = [
      `SELECT token, active, geolocation_per_day, geocoding_per_day, per_second, per_minute, slots,
         txid_current()::text AS xid
       FROM tokens WHERE token = ANY(${t}) ORDER BY token FOR UPDATE`,
      `SELECT token, day, service, used FROM token_usage WHERE token = ANY(${t}) AND day = ANY(${d})`,
      `SELECT token, bucket, win, hits FROM token_rate WHERE token = ANY(${t})`,
      ...(ids.length > 0
        ? [
            `SELECT token, day, device_id FROM token_devices
             WHERE token = ANY(${t}) AND day = ANY(${d}) AND device_id = ANY(${textArray(ids)})`,
          ]
        : []),
    ];
    return this.#transaction(reads.join(';\n'), async (_client, read) => {
      const [locked, used, rate, devices] = read as [
        pg.QueryResult<LockedRow>,
        pg.QueryResult<{ token: string; day: number; service: string; used: number }>,
        pg.QueryResult<{ token: string; bucket: string; win: number; hits: number }>,
        pg.QueryResult<{ token: string; day: number; device_id: string }> | undefined,
      ];
      run.xid = locked.rows[0]?.xid;
      const limits = new Map(locked.rows.map((r) => [r.token, r]));
      const state = new BatchState();
      for (const u of used.rows) state.used.set(`${u.token}\n${u.day}\n${u.service}`, { ...u, add: 0 });
      for (const r of rate.rows) state.rate.set(`${r.token}\n${r.bucket}`, { ...r, dirty: false });
      for (const x of devices?.rows ?? []) state.devices.add(`${x.token}\n${x.day}\n${x.device_id}`);
      const results = batch.map((p) => applyJob(state, p.job, limits.get(p.job.token)));
      run.results = results;
      return { value: results, writes: writeStatements(state) };
    });
  }

  /**
   * One transaction: `BEGIN` and `reads` (statements with their values inline) in one round trip,
   * then `work` with their results (it may send queries of its own) returning the value and the
   * statements that write it, sent with `COMMIT` in one round trip.
   */
  async #transaction<T>(
    reads: string | undefined,
    work: (client: pg.PoolClient, read: pg.QueryResult[]) => Promise<{ value: T; writes?: string }>,
  ): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      this.#lastError = (err as Error).message;
      throw asUnavailable(err);
    }
    let broken: Error | undefined;
    // A connection that breaks between two queries reports it as an 'error' event of the
    // client, which would end the process without a listener; the next query fails anyway.
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    let committing = false;
    try {
      // Several statements in one query answer with one result each, the first BEGIN's.
      const begun = (await client.query(reads === undefined ? 'BEGIN' : `BEGIN;\n${reads}`)) as
        | pg.QueryResult
        | pg.QueryResult[];
      const { value, writes } = await work(client, Array.isArray(begun) ? begun.slice(1) : []);
      committing = true;
      await client.query(writes ? `${writes};\nCOMMIT` : 'COMMIT');
      this.#lastError = undefined;
      return value;
    } catch (err) {
      if (!(err instanceof TokenError)) this.#lastError = (err as Error).message;
      // The session ending (shutdown, terminated: SQLSTATE 57P01 and kin) as the answer to COMMIT
      // may come after the commit was made: as unknown as no answer at all.
      const ending = err instanceof pg.DatabaseError && UNAVAILABLE_CLASSES.has(String(err.code).slice(0, 2));
      if ((err instanceof pg.DatabaseError && !(committing && ending)) || err instanceof TokenError) {
        // The server answered: the transaction is aborted, and the connection is sound.
        await client.query('ROLLBACK').catch((e: Error) => {
          broken = e;
        });
        throw asUnavailable(err);
      }
      // No answer (connection lost, timeout): the connection is dropped, which aborts whatever
      // the server still holds of the transaction, unless COMMIT had already gone out.
      broken = err as Error;
      if (committing) throw new CommitOutcomeUnknown(err);
      throw asUnavailable(err);
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async #query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      const r = await this.pool.query<R>(text, values);
      this.#lastError = undefined;
      return r;
    } catch (err) {
      this.#lastError = (err as Error).message;
      throw asUnavailable(err);
    }
  }

  /** Replaces the in-memory copy of the tokens table. */
  async #reload(): Promise<void> {
    const r = await this.#query<TokenRow>('SELECT * FROM tokens');
    const seen = new Set<string>();
    for (const row of r.rows) {
      seen.add(row.token);
      this.#records.set(row.token, fromRow(row));
    }
    for (const token of this.#records.keys()) if (!seen.has(token)) this.#records.delete(token);
  }

  async #reloadOne(token: string): Promise<void> {
    const r = await this.#query<TokenRow>('SELECT * FROM tokens WHERE token = $1', [token]);
    const row = r.rows[0];
    if (row) this.#records.set(token, fromRow(row));
    else this.#records.delete(token);
  }

  /** LISTEN on a connection of its own; when it breaks, {@link #relisten}. */
  async #listen(): Promise<void> {
    const client = new pg.Client({ ...this.config, types: TYPES });
    const broke = () => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      client.end().catch(() => {});
      this.#relisten();
    };
    client.on('error', broke);
    client.on('end', broke);
    client.on('notification', (n) => {
      if (n.channel === CHANNEL && n.payload) this.#reloadOne(n.payload).catch(() => {});
    });
    this.#listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      this.#listener = undefined;
      client.end().catch(() => {});
      throw err;
    }
  }

  /** Listens again after a second (and again until it works), then reloads what it missed meanwhile. */
  #relisten(): void {
    if (this.#closed || this.#reconnectTimer !== undefined) return;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (this.#closed) return;
      this.#listen()
        .then(() => this.#reload())
        .catch(() => this.#relisten());
    }, 1000);
    this.#reconnectTimer.unref();
  }
}

/** A text literal of `value`, quoted and escaped for a query with its values inline. */
function textLiteral(value: string): string {
  // PostgreSQL text cannot hold NUL, and a NUL would end the query message itself.
  if (value.includes('\0')) throw new RangeError('a value holding NUL cannot be stored in PostgreSQL');
  return pg.escapeLiteral(value);
}

/** A `text[]` literal of `values`. */
function textArray(values: readonly string[]): string {
  return `ARRAY[${values.map(textLiteral).join(',')}]::text[]`;
}

/** A `bigint[]` literal of `values`, each a safe integer. */
function intArray(values: readonly number[]): string {
  for (const v of values) if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer: ${v}`);
  return `ARRAY[${values.join(',')}]::bigint[]`;
}

/**
 * The statements that write a batch's changes (usage added, rate windows set, devices
 * recorded), values inline, one statement per table that changed; '' when nothing did.
 */
function writeStatements(state: BatchState): string {
  const out: string[] = [];
  const usage = [...state.used.values()].filter((u) => u.add > 0);
  if (usage.length > 0)
    out.push(
      `INSERT INTO token_usage (token, day, service, used)
       SELECT * FROM unnest(${textArray(usage.map((u) => u.token))}, ${intArray(usage.map((u) => u.day))}::int[],
         ${textArray(usage.map((u) => u.service))}, ${intArray(usage.map((u) => u.add))})
       ON CONFLICT (token, day, service) DO UPDATE SET used = token_usage.used + excluded.used`,
    );
  const rate = [...state.rate.values()].filter((r) => r.dirty);
  if (rate.length > 0)
    out.push(
      `INSERT INTO token_rate (token, bucket, win, hits)
       SELECT * FROM unnest(${textArray(rate.map((r) => r.token))}, ${textArray(rate.map((r) => r.bucket))},
         ${intArray(rate.map((r) => r.win))}, ${intArray(rate.map((r) => r.hits))})
       ON CONFLICT (token, bucket) DO UPDATE SET win = excluded.win, hits = excluded.hits`,
    );
  if (state.newDevices.length > 0)
    out.push(
      `INSERT INTO token_devices (token, day, device_id)
       SELECT * FROM unnest(${textArray(state.newDevices.map((x) => x.token))},
         ${intArray(state.newDevices.map((x) => x.day))}::int[], ${textArray(state.newDevices.map((x) => x.id))})
       ON CONFLICT DO NOTHING`,
    );
  return out.join(';\n');
}

/** The parameters $1..$15 of a tokens row, in column order. */
function rowValues(row: TokenRow): unknown[] {
  return [
    row.token,
    row.label,
    row.active,
    row.geolocation_per_day,
    row.geocoding_per_day,
    row.per_second,
    row.per_minute,
    row.scopes,
    row.referrers,
    row.ips,
    row.services,
    row.slots,
    row.gps,
    row.created_at,
    row.updated_at,
  ];
}
