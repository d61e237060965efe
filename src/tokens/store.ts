/**
 * Access tokens, daily balances and rate limits, kept in `DIR/tokens.sqlite` (better-sqlite3,
 * WAL). The HTTP server opens one store per process; the CLI opens the same file to manage
 * tokens while the server runs. See docs/tokens.md for the schema and the durability argument.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { preparePrivateDatabase } from '../private-file.js';
import { GroupCommit } from './group-commit.js';
import { maskToken } from './mask.js';
import { ipEntryProblem, MAX_IPS, MAX_REFERRERS, referrerPatternProblem } from './restrictions.js';
import type { TokenStorage } from './storage.js';

/** A service whose successful calls are charged against a daily balance. */
export type MeteredService = 'geolocation' | 'geocoding';
/**
 * Scopes a token may hold: the geocoding ones of spec 5.7, and `sync` (this project's
 * `GET /v2/sync`, which hands out stations in bulk: docs/sync.md).
 */
export type Scope = 'geocoding:forward' | 'geocoding:reverse' | 'sync';
/** Map services a token may have enabled (spec 5.8). */
export type MapService = 'maps' | 'static';

/** Every scope, in a stable order. */
export const SCOPES: readonly Scope[] = ['geocoding:forward', 'geocoding:reverse', 'sync'];
/** Every map service, in a stable order. */
export const MAP_SERVICES: readonly MapService[] = ['maps', 'static'];

/**
 * What a new token gets for every field its creator leaves out. Generous enough to try every
 * route, bounded so that a leaked trial token cannot be used without limit; everything enabled
 * except GPS submissions, which the spec (2.2) says must be enabled for an account beforehand.
 */
export const TOKEN_DEFAULTS = {
  geolocationPerDay: 10_000,
  geocodingPerDay: 5_000,
  // Not `sync`: a copy of the whole station database is given only on purpose.
  scopes: ['geocoding:forward', 'geocoding:reverse'] as readonly Scope[],
  services: MAP_SERVICES,
  gps: false,
} as const;

/** An access token and its settings, as stored. */
export interface TokenRecord {
  /** The secret itself: 32 random bytes, base64url (43 characters). */
  token: string;
  label?: string;
  /** False once revoked; a revoked token is kept for its history. */
  active: boolean;
  /** Geolocation calls allowed per UTC day. */
  geolocationPerDay: number;
  /** Geocoding calls allowed per UTC day. */
  geocodingPerDay: number;
  /** Metered calls allowed per second (all services together); absent = no limit. */
  perSecond?: number;
  /** Metered calls allowed per minute (all services together); absent = no limit. */
  perMinute?: number;
  scopes: Scope[];
  /** Referrer patterns (spec 5.4); empty = any referrer. */
  referrers: string[];
  /** IP addresses and CIDR subnets (spec 5.5); empty = any address. */
  ips: string[];
  services: MapService[];
  /** Device plan: most distinct device ids (`id`, spec 2.2) per UTC day; absent = not a device plan. */
  slots?: number;
  /** Whether GPS submissions (spec 2.5) are accepted from this token. */
  gps: boolean;
  /** ms since the epoch. */
  createdAt: number;
  /** ms since the epoch. */
  updatedAt: number;
}

/**
 * Settings for {@link TokenStore.create} and {@link TokenStore.update}. An absent field keeps
 * its value (or takes its default on create); `null` clears an optional limit; a list replaces
 * the stored list.
 */
export interface TokenInput {
  label?: string;
  geolocationPerDay?: number;
  geocodingPerDay?: number;
  perSecond?: number | null;
  perMinute?: number | null;
  scopes?: Scope[];
  referrers?: string[];
  ips?: string[];
  services?: MapService[];
  slots?: number | null;
  gps?: boolean;
}

/** A token operation that cannot be done: the token does not exist, or the settings are invalid. */
export class TokenError extends Error {
  constructor(
    /** NOT_FOUND: no such token. INVALID: a setting breaks a rule; the message says which and the limit. */
    readonly code: 'NOT_FOUND' | 'INVALID',
    message: string,
  ) {
    super(message);
    this.name = 'TokenError';
  }
}

/** The outcome of {@link TokenStore.charge}. `balance` is what remains today for the service. */
export type ChargeOutcome =
  | { ok: true; balance: number; balanceSlots?: number }
  | {
      ok: false;
      reason:
        | 'INVALID_TOKEN'
        | 'INACTIVE_TOKEN'
        | 'RATELIMITED_DAY'
        | 'RATELIMITED_MINUTE'
        | 'RATELIMITED_SECOND'
        | 'SLOTS';
      balance: number;
    };

/** Options of {@link TokenStore.open}. */
export interface TokenStoreOptions {
  /** How long {@link TokenStore.get} trusts a looked-up record (default 2000 ms): changes take effect within seconds. */
  cacheMs?: number;
  /** The clock, in ms since the epoch (tests move it across midnight). */
  now?: () => number;
  /**
   * SQLite `synchronous` for the charge commits. FULL (default) fsyncs the WAL at every commit,
   * so a reported charge survives a power cut as well as `kill -9`. NORMAL skips that fsync: a
   * committed transaction is in the WAL file (the OS page cache) before `charge` resolves, which
   * survives `kill -9` of the process but not a crash of the machine. See docs/tokens.md.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** Gather charges for this long before committing (default 0: the next event-loop turn). */
  groupMs?: number;
  /** How long SQLite waits for a lock in admin writes and reads (default 5000 ms). */
  busyTimeoutMs?: number;
  /** How long a group of charges waits for another process's write lock before they reject (default 10 000 ms). */
  lockWaitMs?: number;
}

const DAY_MS = 86_400_000;
/** The usage row that counts a day's distinct device ids, beside the services' rows. */
export const DEVICES_ROW = '#devices';
/** Cap on cached lookups: unknown tokens are cached too, and callers choose those freely. */
const MAX_CACHE = 50_000;
const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tokens (
  token TEXT PRIMARY KEY,
  label TEXT,
  active INTEGER NOT NULL DEFAULT 1,
  geolocation_per_day INTEGER NOT NULL,
  geocoding_per_day INTEGER NOT NULL,
  per_second INTEGER,
  per_minute INTEGER,
  scopes TEXT NOT NULL DEFAULT '[]',
  referrers TEXT NOT NULL DEFAULT '[]',
  ips TEXT NOT NULL DEFAULT '[]',
  services TEXT NOT NULL DEFAULT '[]',
  slots INTEGER,
  gps INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
  token TEXT NOT NULL,
  day INTEGER NOT NULL,
  service TEXT NOT NULL,
  used INTEGER NOT NULL,
  PRIMARY KEY (token, day, service)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS devices (
  token TEXT NOT NULL,
  day INTEGER NOT NULL,
  device_id TEXT NOT NULL,
  PRIMARY KEY (token, day, device_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate (
  token TEXT NOT NULL,
  bucket TEXT NOT NULL,
  win INTEGER NOT NULL,
  hits INTEGER NOT NULL,
  PRIMARY KEY (token, bucket)
) WITHOUT ROWID;
`;

/** A `tokens` row as both stores keep it (flags as 0/1, lists as JSON text). */
export interface TokenRow {
  token: string;
  label: string | null;
  active: number;
  geolocation_per_day: number;
  geocoding_per_day: number;
  per_second: number | null;
  per_minute: number | null;
  scopes: string;
  referrers: string;
  ips: string;
  services: string;
  slots: number | null;
  gps: number;
  created_at: number;
  updated_at: number;
}

/** The columns a charge needs. */
export type LimitRow = Pick<
  TokenRow,
  'active' | 'geolocation_per_day' | 'geocoding_per_day' | 'per_second' | 'per_minute' | 'slots'
>;

export type Job =
  | {
      kind: 'charge';
      token: string;
      service: MeteredService;
      units: number;
      deviceId: string | undefined;
      /** The call was counted against the rate limits by {@link TokenStore.admit}: not again. */
      admitted: boolean;
      at: number;
    }
  | { kind: 'admit'; token: string; service: MeteredService | undefined; at: number }
  | { kind: 'hit'; token: string; bucket: string; limit: number; windowMs: number; at: number };

export type JobResult = ChargeOutcome | AdmitOutcome | boolean;

/**
 * The outcome of {@link TokenStore.admit}: the call may do its work (and was counted against the
 * token's per-second and per-minute limits), or the reason it may not. `balance` is what remains
 * today for the service asked about (0 when none was).
 */
export type AdmitOutcome =
  | { ok: true; balance: number }
  | {
      ok: false;
      reason:
        | 'INVALID_TOKEN'
        | 'INACTIVE_TOKEN'
        | 'RATELIMITED_DAY'
        | 'RATELIMITED_MINUTE'
        | 'RATELIMITED_SECOND';
      balance: number;
    };

/** Opens the token database with the settings every connection to it needs. */
export function openTokenDatabase(
  dbDir: string,
  options: { synchronous?: 'FULL' | 'NORMAL'; busyTimeoutMs?: number } = {},
): Database.Database {
  mkdirSync(dbDir, { recursive: true });
  const file = join(dbDir, 'tokens.sqlite');
  // The file holds the tokens themselves (lookups need them): readable by its owner only, also
  // when an older version or a loose umask created it readable by others.
  preparePrivateDatabase(file);
  const db = new Database(file);
  // busy_timeout first: the statements after it may meet another process's lock while it
  // creates the file or switches it to WAL.
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION)
    throw new Error(`tokens.sqlite has schema version ${version}; this build knows up to ${SCHEMA_VERSION}`);
  if (version < SCHEMA_VERSION) {
    db.transaction(() => {
      db.exec(SCHEMA);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    }).immediate();
  }
  return db;
}

/** Tokens, balances and limits in `DIR/tokens.sqlite`; see the module comment. */
export class TokenStore implements TokenStorage {
  private readonly cache = new Map<string, { record: TokenRecord | undefined; until: number }>();
  private readonly commits: GroupCommit<Job, JobResult>;
  private readonly now: () => number;
  private readonly cacheMs: number;
  private readonly stmt;

  private constructor(
    private readonly db: Database.Database,
    options: TokenStoreOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.cacheMs = options.cacheMs ?? 2000;
    this.stmt = {
      selectRecord: db.prepare<[string], TokenRow>('SELECT * FROM tokens WHERE token = ?'),
      selectAll: db.prepare<[], TokenRow>('SELECT * FROM tokens ORDER BY created_at, token'),
      selectLimits: db.prepare<[string], LimitRow>(
        'SELECT active, geolocation_per_day, geocoding_per_day, per_second, per_minute, slots FROM tokens WHERE token = ?',
      ),
      insert: db.prepare(
        `INSERT INTO tokens (token, label, active, geolocation_per_day, geocoding_per_day, per_second, per_minute,
           scopes, referrers, ips, services, slots, gps, created_at, updated_at)
         VALUES (@token, @label, @active, @geolocation_per_day, @geocoding_per_day, @per_second, @per_minute,
           @scopes, @referrers, @ips, @services, @slots, @gps, @created_at, @updated_at)`,
      ),
      replace: db.prepare(
        `UPDATE tokens SET label = @label, active = @active, geolocation_per_day = @geolocation_per_day,
           geocoding_per_day = @geocoding_per_day, per_second = @per_second, per_minute = @per_minute,
           scopes = @scopes, referrers = @referrers, ips = @ips, services = @services, slots = @slots,
           gps = @gps, updated_at = @updated_at
         WHERE token = @token`,
      ),
      selectUsed: db.prepare<[string, number, string], { used: number }>(
        'SELECT used FROM usage WHERE token = ? AND day = ? AND service = ?',
      ),
      addUsed: db.prepare<[string, number, string, number]>(
        `INSERT INTO usage (token, day, service, used) VALUES (?, ?, ?, ?)
         ON CONFLICT (token, day, service) DO UPDATE SET used = used + excluded.used`,
      ),
      selectDevice: db.prepare<[string, number, string], { one: number }>(
        'SELECT 1 AS one FROM devices WHERE token = ? AND day = ? AND device_id = ?',
      ),
      insertDevice: db.prepare<[string, number, string]>(
        'INSERT INTO devices (token, day, device_id) VALUES (?, ?, ?)',
      ),
      selectRate: db.prepare<[string, string], { win: number; hits: number }>(
        'SELECT win, hits FROM rate WHERE token = ? AND bucket = ?',
      ),
      putRate: db.prepare<[string, string, number, number]>(
        'INSERT OR REPLACE INTO rate (token, bucket, win, hits) VALUES (?, ?, ?, ?)',
      ),
    };
    this.commits = new GroupCommit<Job, JobResult>(db, (jobs) => jobs.map((j) => this.apply(j)), {
      delayMs: options.groupMs ?? 0,
      lockWaitMs: options.lockWaitMs ?? 10_000,
    });
  }

  /** Opens (creating if needed) DIR/tokens.sqlite in WAL mode; safe to open from several processes at once. */
  static open(dbDir: string, options: TokenStoreOptions = {}): TokenStore {
    return new TokenStore(openTokenDatabase(dbDir, options), options);
  }

  /** Creates a token with `input` over {@link TOKEN_DEFAULTS}; the token is 32 random bytes, base64url. */
  create(input: TokenInput): TokenRecord {
    const record = newRecord(input, this.now());
    this.stmt.insert.run(toRow(record));
    this.cache.delete(record.token);
    return record;
  }

  /** Changes a token's settings; see {@link TokenInput} for what absent and `null` mean. */
  update(token: string, patch: TokenInput): TokenRecord {
    return this.modify(token, (r) => applyInput(r, patch));
  }

  /** Makes a token inactive; it is kept, with its usage, for its history. */
  revoke(token: string): TokenRecord {
    return this.modify(token, (r) => ({ ...r, active: false }));
  }

  private modify(token: string, change: (r: TokenRecord) => TokenRecord): TokenRecord {
    const run = this.db.transaction(() => {
      const row = this.stmt.selectRecord.get(token);
      if (!row) throw new TokenError('NOT_FOUND', `no token ${maskToken(token)}`);
      const updated = change(fromRow(row));
      updated.updatedAt = Math.max(this.now(), updated.createdAt);
      this.stmt.replace.run(toRow(updated));
      return updated;
    });
    const record = run.immediate();
    this.cache.delete(token);
    return record;
  }

  /** Every token, oldest first. */
  list(): TokenRecord[] {
    return this.stmt.selectAll.all().map(fromRow);
  }

  /** Cached lookup (cacheMs); undefined for an unknown token. */
  get(token: string): TokenRecord | undefined {
    const now = this.now();
    const hit = this.cache.get(token);
    if (hit && hit.until > now) return hit.record;
    const row = this.stmt.selectRecord.get(token);
    const record = row ? fromRow(row) : undefined;
    if (this.cache.size >= MAX_CACHE) this.cache.clear();
    this.cache.set(token, { record, until: now + this.cacheMs });
    return record;
  }

  /** Remaining balance today (UTC day) without charging; 0 for an unknown token. */
  balance(token: string, service: MeteredService): number {
    const row = this.stmt.selectLimits.get(token);
    if (!row) return 0;
    const day = utcDay(this.now());
    const used = this.stmt.selectUsed.get(token, day, service)?.used ?? 0;
    return Math.max(0, perDay(row, service) - used);
  }

  /**
   * Checks the rate limits and the daily balance and, when allowed, charges `units` (default 1)
   * for `service`.
   *
   * Resolves only after the charge is committed to SQLite, so a response that reports a charge
   * never loses it on `kill -9`. Concurrent calls within one process are grouped into one
   * transaction (group commit); several processes share the file through `BEGIN IMMEDIATE`
   * and `busy_timeout`, and never count a charge twice or lose one.
   *
   * The per-second and per-minute limits count calls (not units) over all metered services of
   * the token, in fixed windows aligned to the clock. Only allowed calls are counted.
   *
   * `deviceId` (spec 2.2 `id`) counts device slots for tokens with `slots`:
   * balanceSlots = slots - distinct ids today; a new id beyond the limit gives reason 'SLOTS'.
   * A call without `deviceId` on a device plan uses no slot.
   *
   * Checks, in order: INVALID_TOKEN, INACTIVE_TOKEN, RATELIMITED_DAY, RATELIMITED_MINUTE,
   * RATELIMITED_SECOND, SLOTS. Rejects (and charges nothing) only if the database fails.
   */
  charge(
    token: string,
    service: MeteredService,
    options: { units?: number; deviceId?: string; admitted?: boolean } = {},
  ): Promise<ChargeOutcome> {
    const units = options.units ?? 1;
    const bad = chargeArgumentError(units, service);
    if (bad) return Promise.reject(bad);
    return this.commits.submit({
      kind: 'charge',
      token,
      service,
      units,
      deviceId: options.deviceId,
      admitted: options.admitted === true,
      at: this.now(),
    }) as Promise<ChargeOutcome>;
  }

  /**
   * Admission of a call that is about to do work, billed or not: checks the token, its daily
   * balance for `service` (none left: RATELIMITED_DAY; no `service`: no balance check) and its
   * per-minute and per-second limits, and counts the admitted call in those windows. Calls that
   * turn out unbilled (no match, `geolocation: 0`, a sync page) therefore still use the limits;
   * a billed call then charges with `admitted: true`, which checks the balance again but does
   * not count the call a second time. Checks in the order of {@link charge}; a refused call is
   * not counted. Resolves after the commit, like {@link charge}.
   */
  admit(token: string, service?: MeteredService): Promise<AdmitOutcome> {
    if (service !== undefined && service !== 'geolocation' && service !== 'geocoding')
      return Promise.reject(new RangeError(`unknown metered service ${String(service)}`));
    return this.commits.submit({ kind: 'admit', token, service, at: this.now() }) as Promise<AdmitOutcome>;
  }

  /**
   * Rate-limit check without charging, for calls that are limited but not metered (e.g.
   * /balance: 1 per second per token). Resolves true when the call is allowed (and counts it),
   * false when `perSecond` calls of this token and bucket were already allowed in the current
   * second. Shared by every process using the file. An unknown token is not counted and
   * resolves true: the caller reports it as invalid anyway.
   */
  hit(token: string, bucket: string, perSecond: number): Promise<boolean> {
    return this.commits.submit({
      kind: 'hit',
      token,
      bucket: `hit:${bucket}`,
      limit: perSecond,
      windowMs: 1000,
      at: this.now(),
    }) as Promise<boolean>;
  }

  /** Commits the charges still waiting and closes the database. */
  close(): void {
    if (!this.db.open) return;
    this.commits.close();
    this.db.close();
  }

  /** Applies one queued job inside the group's transaction. */
  private apply(job: Job): JobResult {
    return applyJob(this.metering, job, this.stmt.selectLimits.get(job.token));
  }

  /** The day's usage, devices and rate windows as {@link applyJob} reads and writes them. */
  private readonly metering: MeteringState = {
    getUsed: (token, day, service) => this.stmt.selectUsed.get(token, day, service)?.used ?? 0,
    addUsed: (token, day, service, units) => {
      this.stmt.addUsed.run(token, day, service, units);
    },
    hasDevice: (token, day, id) => this.stmt.selectDevice.get(token, day, id) !== undefined,
    addDevice: (token, day, id) => {
      this.stmt.insertDevice.run(token, day, id);
    },
    windowHits: (token, bucket, window) => this.windowHits(token, bucket, window),
    putRate: (token, bucket, window, count) => {
      this.stmt.putRate.run(token, bucket, window, count);
    },
  };

  private windowHits(token: string, bucket: string, window: number): number {
    const r = this.stmt.selectRate.get(token, bucket);
    return r && r.win === window ? r.hits : 0;
  }
}

/**
 * 32 random bytes, base64url (43 characters). A token never starts with `-`: one in 64 would,
 * and a command line (`whereabouts token update -x...`) would read it as an option.
 */
export function newToken(): string {
  for (;;) {
    const token = randomBytes(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
}

/** A new token's record: `input` over {@link TOKEN_DEFAULTS}, created at `now`; throws {@link TokenError} INVALID. */
export function newRecord(input: TokenInput, now: number): TokenRecord {
  return applyInput(
    {
      token: newToken(),
      active: true,
      geolocationPerDay: TOKEN_DEFAULTS.geolocationPerDay,
      geocodingPerDay: TOKEN_DEFAULTS.geocodingPerDay,
      scopes: [...TOKEN_DEFAULTS.scopes],
      referrers: [],
      ips: [],
      services: [...TOKEN_DEFAULTS.services],
      gps: TOKEN_DEFAULTS.gps,
      createdAt: now,
      updatedAt: now,
    },
    input,
  );
}

/** The UTC day number (days since the epoch) of a time in ms: balances reset at 00:00 UTC. */
export function utcDay(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The daily allowance of `service` in a limits row. */
export function perDay(row: LimitRow, service: MeteredService): number {
  return service === 'geolocation' ? row.geolocation_per_day : row.geocoding_per_day;
}

/** The record of a stored row. */
export function fromRow(row: TokenRow): TokenRecord {
  return ordered({
    token: row.token,
    label: row.label ?? undefined,
    active: row.active !== 0,
    geolocationPerDay: row.geolocation_per_day,
    geocodingPerDay: row.geocoding_per_day,
    perSecond: row.per_second ?? undefined,
    perMinute: row.per_minute ?? undefined,
    scopes: JSON.parse(row.scopes) as Scope[],
    referrers: JSON.parse(row.referrers) as string[],
    ips: JSON.parse(row.ips) as string[],
    services: JSON.parse(row.services) as MapService[],
    slots: row.slots ?? undefined,
    gps: row.gps !== 0,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

/** The record with its keys in declaration order and no undefined optional keys (stable JSON for the CLI). */
function ordered(r: TokenRecord): TokenRecord {
  const out: Record<string, unknown> = {};
  const keys: (keyof TokenRecord)[] = [
    'token',
    'label',
    'active',
    'geolocationPerDay',
    'geocodingPerDay',
    'perSecond',
    'perMinute',
    'scopes',
    'referrers',
    'ips',
    'services',
    'slots',
    'gps',
    'createdAt',
    'updatedAt',
  ];
  for (const k of keys) if (r[k] !== undefined) out[k] = r[k];
  return out as unknown as TokenRecord;
}

/** The stored row of a record. */
export function toRow(r: TokenRecord): TokenRow {
  return {
    token: r.token,
    label: r.label ?? null,
    active: r.active ? 1 : 0,
    geolocation_per_day: r.geolocationPerDay,
    geocoding_per_day: r.geocodingPerDay,
    per_second: r.perSecond ?? null,
    per_minute: r.perMinute ?? null,
    scopes: JSON.stringify(r.scopes),
    referrers: JSON.stringify(r.referrers),
    ips: JSON.stringify(r.ips),
    services: JSON.stringify(r.services),
    slots: r.slots ?? null,
    gps: r.gps ? 1 : 0,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

const MAX_LABEL = 200;

function count(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw new TokenError('INVALID', `${name} must be a whole number of ${min} or more, not ${String(value)}`);
  return value;
}

function distinct<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** `base` with `input` applied and every rule checked; throws {@link TokenError} INVALID. */
export function applyInput(base: TokenRecord, input: TokenInput): TokenRecord {
  const r: TokenRecord = { ...base };
  if (input.label !== undefined) {
    if (typeof input.label !== 'string' || input.label.length > MAX_LABEL)
      throw new TokenError('INVALID', `label must be text of at most ${MAX_LABEL} characters`);
    if (input.label === '') delete r.label;
    else r.label = input.label;
  }
  if (input.geolocationPerDay !== undefined)
    r.geolocationPerDay = count('geolocation per day', input.geolocationPerDay, 0);
  if (input.geocodingPerDay !== undefined)
    r.geocodingPerDay = count('geocoding per day', input.geocodingPerDay, 0);
  if (input.perSecond === null) delete r.perSecond;
  else if (input.perSecond !== undefined) r.perSecond = count('per-second limit', input.perSecond, 1);
  if (input.perMinute === null) delete r.perMinute;
  else if (input.perMinute !== undefined) r.perMinute = count('per-minute limit', input.perMinute, 1);
  if (input.slots === null) delete r.slots;
  else if (input.slots !== undefined) r.slots = count('device slots', input.slots, 0);
  if (input.gps !== undefined) r.gps = Boolean(input.gps);
  if (input.scopes !== undefined) {
    for (const s of input.scopes)
      if (!SCOPES.includes(s))
        throw new TokenError('INVALID', `unknown scope "${s}"; scopes are ${SCOPES.join(', ')}`);
    r.scopes = distinct(input.scopes);
  }
  if (input.services !== undefined) {
    for (const s of input.services)
      if (!MAP_SERVICES.includes(s))
        throw new TokenError('INVALID', `unknown service "${s}"; services are ${MAP_SERVICES.join(', ')}`);
    r.services = distinct(input.services);
  }
  if (input.referrers !== undefined) {
    const list = distinct(input.referrers);
    if (list.length > MAX_REFERRERS)
      throw new TokenError(
        'INVALID',
        `${list.length} referrer patterns; a token may have at most ${MAX_REFERRERS}`,
      );
    for (const p of list) {
      const problem =
        typeof p === 'string' ? referrerPatternProblem(p) : 'a referrer pattern that is not text';
      if (problem) throw new TokenError('INVALID', problem);
    }
    r.referrers = list;
  }
  if (input.ips !== undefined) {
    const list = distinct(input.ips);
    if (list.length > MAX_IPS)
      throw new TokenError('INVALID', `${list.length} IP entries; a token may have at most ${MAX_IPS}`);
    for (const ip of list) {
      const problem = typeof ip === 'string' ? ipEntryProblem(ip) : 'an IP entry that is not text';
      if (problem) throw new TokenError('INVALID', problem);
    }
    r.ips = list;
  }
  return ordered(r);
}

/** The rate windows a store keeps per token and bucket. */
export interface RateWindows {
  /** Calls counted in `window` (a minute or second number) of `bucket`. */
  windowHits(token: string, bucket: string, window: number): number;
  putRate(token: string, bucket: string, window: number, count: number): void;
}

/** The outcome of {@link rateCheck}. */
export type RateCheck =
  | { ok: true; count: () => void }
  | { ok: false; reason: 'RATELIMITED_MINUTE' | 'RATELIMITED_SECOND' };

/**
 * The per-minute and per-second windows of a call at `at`: refused with the limit it hits,
 * or allowed with `count` to record it (called only once every other check has passed). One
 * rule for both stores (SQLite here, PostgreSQL in pg-store.ts).
 */
export function rateCheck(windows: RateWindows, row: LimitRow, token: string, at: number): RateCheck {
  let minute: number | undefined;
  if (row.per_minute !== null) {
    minute = windows.windowHits(token, 'charge:m', Math.floor(at / 60_000));
    if (minute >= row.per_minute) return { ok: false, reason: 'RATELIMITED_MINUTE' };
  }
  let second: number | undefined;
  if (row.per_second !== null) {
    second = windows.windowHits(token, 'charge:s', Math.floor(at / 1000));
    if (second >= row.per_second) return { ok: false, reason: 'RATELIMITED_SECOND' };
  }
  return {
    ok: true,
    count: () => {
      if (minute !== undefined) windows.putRate(token, 'charge:m', Math.floor(at / 60_000), minute + 1);
      if (second !== undefined) windows.putRate(token, 'charge:s', Math.floor(at / 1000), second + 1);
    },
  };
}

/** What {@link applyJob} reads and writes besides the token's limits. */
export interface MeteringState extends RateWindows {
  /** Units of `service` (or devices, {@link DEVICES_ROW}) used by the token on UTC day `day`. */
  getUsed(token: string, day: number, service: string): number;
  addUsed(token: string, day: number, service: string, units: number): void;
  hasDevice(token: string, day: number, id: string): boolean;
  addDevice(token: string, day: number, id: string): void;
}

/** What is wrong with a charge's arguments, in either store; undefined when nothing is. */
export function chargeArgumentError(units: number, service: MeteredService): RangeError | undefined {
  if (!Number.isSafeInteger(units) || units < 1)
    return new RangeError(`units must be a positive integer, not ${units}`);
  if (service !== 'geolocation' && service !== 'geocoding')
    return new RangeError(`unknown metered service ${String(service)}`);
  return undefined;
}

/**
 * One metering job by the rules both stores follow, in their check order: a refused call
 * writes nothing. `row` is the token's limits (undefined for an unknown token); `state` reads
 * and writes the day's usage, devices and rate windows (SQLite statements here, a batch's
 * locked rows in pg-store.ts).
 */
export function applyJob(state: MeteringState, job: Job, row: LimitRow | undefined): JobResult {
  if (job.kind === 'hit') {
    if (!row) return true;
    const window = Math.floor(job.at / job.windowMs);
    const hits = state.windowHits(job.token, job.bucket, window);
    if (hits >= job.limit) return false;
    state.putRate(job.token, job.bucket, window, hits + 1);
    return true;
  }
  if (!row) return { ok: false, reason: 'INVALID_TOKEN', balance: 0 };
  const { token, at } = job;
  const day = utcDay(at);
  if (job.kind === 'admit') {
    const { service } = job;
    let balance = 0;
    if (service !== undefined)
      balance = Math.max(0, perDay(row, service) - state.getUsed(token, day, service));
    if (!row.active) return { ok: false, reason: 'INACTIVE_TOKEN', balance };
    if (service !== undefined && balance <= 0) return { ok: false, reason: 'RATELIMITED_DAY', balance };
    const rated = rateCheck(state, row, token, at);
    if (!rated.ok) return { ok: false, reason: rated.reason, balance };
    rated.count();
    return { ok: true, balance };
  }
  const { service, units, deviceId, admitted } = job;
  const balance = Math.max(0, perDay(row, service) - state.getUsed(token, day, service));
  if (!row.active) return { ok: false, reason: 'INACTIVE_TOKEN', balance };
  if (units > balance) return { ok: false, reason: 'RATELIMITED_DAY', balance };
  // An admitted call was counted against the windows when it was admitted.
  const rated = admitted ? undefined : rateCheck(state, row, token, at);
  if (rated !== undefined && !rated.ok) return { ok: false, reason: rated.reason, balance };
  let balanceSlots: number | undefined;
  let newDevice = false;
  if (row.slots !== null) {
    const devices = state.getUsed(token, day, DEVICES_ROW);
    if (deviceId !== undefined && !state.hasDevice(token, day, deviceId)) {
      if (devices >= row.slots) return { ok: false, reason: 'SLOTS', balance };
      newDevice = true;
    }
    balanceSlots = Math.max(0, row.slots - devices - (newDevice ? 1 : 0));
  }
  // Every check passed: only now is anything written, so a refused call leaves no trace.
  state.addUsed(token, day, service, units);
  rated?.count();
  if (newDevice && deviceId !== undefined) {
    state.addDevice(token, day, deviceId);
    state.addUsed(token, day, DEVICES_ROW, 1);
  }
  const outcome: ChargeOutcome = { ok: true, balance: balance - units };
  if (balanceSlots !== undefined) outcome.balanceSlots = balanceSlots;
  return outcome;
}
