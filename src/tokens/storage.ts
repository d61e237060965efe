/**
 * The storage interface behind tokens and metering, with two implementations: {@link TokenStore}
 * (SQLite, `DIR/tokens.sqlite`, one machine) and {@link PgTokenStore} (PostgreSQL, shared by
 * several servers). See docs/deploy.md.
 *
 * Lookups (`get`) stay synchronous in both: authorization runs on every request and must not
 * wait for a round trip. SQLite reads the file (with a short cache); PostgreSQL answers from an
 * in-memory copy of the tokens table that LISTEN/NOTIFY and a periodic reload keep current.
 * Everything else may be asynchronous (PostgreSQL) or synchronous (SQLite): callers `await` it.
 */
import type { AdmitOutcome, ChargeOutcome, MeteredService, TokenInput, TokenRecord } from './store.js';

/**
 * The store cannot answer now (PostgreSQL down, unreachable, restarting or too slow): the
 * request that needed it fails at once, is not charged, and may be retried. The HTTP routes
 * answer it with 503 in their family's error shape (src/server/error-shape.ts).
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** A value now (SQLite) or later (PostgreSQL); `await` takes both. */
export type MaybePromise<T> = T | Promise<T>;

/** Tokens, daily balances, rate limits and device slots; see the module comment. */
export interface TokenStorage {
  /** Creates a token with `input` over the defaults. */
  create(input: TokenInput): MaybePromise<TokenRecord>;
  /** Changes a token's settings (absent keeps, `null` clears). */
  update(token: string, patch: TokenInput): MaybePromise<TokenRecord>;
  /** Makes a token inactive, keeping it. */
  revoke(token: string): MaybePromise<TokenRecord>;
  /** Every token, oldest first. */
  list(): MaybePromise<TokenRecord[]>;
  /** The token's record as last seen (changes elsewhere arrive within seconds); undefined if unknown. */
  get(token: string): TokenRecord | undefined;
  /** Remaining balance today (UTC) without charging; 0 for an unknown token. */
  balance(token: string, service: MeteredService): MaybePromise<number>;
  /** Checks the limits and charges; resolves once the charge is committed. */
  charge(
    token: string,
    service: MeteredService,
    options?: { units?: number; deviceId?: string; admitted?: boolean },
  ): Promise<ChargeOutcome>;
  /** Admission of a call about to do work: counted against the per-second and per-minute limits. */
  admit(token: string, service?: MeteredService): Promise<AdmitOutcome>;
  /** A per-second limit on a bucket of calls that are not metered. */
  hit(token: string, bucket: string, perSecond: number): Promise<boolean>;
  /** Commits what is waiting and closes. */
  close(): MaybePromise<void>;
}
