/**
 * Authentication, restriction and metering plumbing shared by every `/v2` route.
 *
 * Routes ask {@link authorize} who is calling, then map its neutral outcome, and the
 * {@link ChargeOutcome} of a metered call, to their own family of spec errors: the geolocation
 * texts of spec 7.1 ({@link geoRefusal}) or the codes of spec 7.2 ({@link codeRefusal}; the
 * routes answering those authorize and refuse through {@link authorizeForCodes}).
 * HTTP status choices are listed in docs/server.md.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GeoMessage } from '../errors.js';
import {
  type ChargeOutcome,
  ipAllowed,
  maskToken,
  referrerAllowed,
  type Scope,
  type TokenRecord,
} from '../tokens/index.js';
import type { TokenAccess } from './ledger.js';
import { callerAddress } from './proxy.js';

/** Why a caller was refused before any work was done. */
export type AccessRefusal = 'INVALID_TOKEN' | 'INACTIVE_TOKEN' | 'REFERRER' | 'IP';

/** A failed charge's reason. */
export type ChargeRefusal = Extract<ChargeOutcome, { ok: false }>['reason'];

/** The outcome of {@link authorize}. */
export type Access = { ok: true; record: TokenRecord } | { ok: false; reason: AccessRefusal };

/** The part of a request that restrictions look at. */
export interface Caller {
  /** The `Referer` header (first value). */
  referrer: string | undefined;
  /** The caller's address, IPv4-mapped IPv6 written as IPv4. */
  ip: string;
}

/**
 * A token as logs may show it: its first 4 characters and an ellipsis. Tokens are secrets and
 * logs travel further than the database.
 */
export function tokenPreview(token: string | undefined): string {
  return token === undefined ? '(none)' : maskToken(token);
}

/** `::ffff:1.2.3.4` (a dual-stack socket's view of an IPv4 caller) as `1.2.3.4`. */
export function plainIp(ip: string): string {
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

/** Reads the caller's referrer and address from a Fastify request. */
export function callerOf(request: {
  headers: Record<string, string | string[] | undefined>;
  ip: string;
  ips?: string[] | undefined;
}): Caller {
  const header = request.headers.referer;
  const referrer = Array.isArray(header) ? header[0] : header;
  return { referrer, ip: plainIp(callerAddress(request)) };
}

/**
 * Looks the token up and applies its active flag and its referrer and IP restrictions
 * (spec 5.4, 5.5). Never charges anything.
 */
export function authorize(
  tokens: Pick<TokenAccess, 'get'>,
  token: string | undefined,
  caller: Caller,
): Access {
  if (token === undefined || token === '') return { ok: false, reason: 'INVALID_TOKEN' };
  const record = tokens.get(token);
  if (record === undefined) return { ok: false, reason: 'INVALID_TOKEN' };
  if (!record.active) return { ok: false, reason: 'INACTIVE_TOKEN' };
  if (record.referrers.length > 0 && !referrerAllowed(record.referrers, caller.referrer)) {
    return { ok: false, reason: 'REFERRER' };
  }
  if (record.ips.length > 0 && !ipAllowed(record.ips, caller.ip)) return { ok: false, reason: 'IP' };
  return { ok: true, record };
}

/** An error answer: HTTP status, the message, and headers to add. */
export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** Messages of refusals the spec does not spell out for `/process` (docs/server.md). */
export const ServerMessage = {
  referrerRefused: 'Access restricted - this token does not accept requests from this referrer',
  ipRefused: 'Access restricted - this token does not accept requests from this IP address',
  gpsNotEnabled: 'GPS submissions are not enabled for this token',
  rateLimitedSecond: 'Rate limited - too many requests per second for this token; retry in a second',
  rateLimitedMinute: 'Rate limited - too many requests per minute for this token; retry in a minute',
  slots: 'Device limit reached - no free device slot on this token for this id',
  bodyTooLarge: 'Request body too large',
  notFound: 'Not found',
  unknownError: 'Unknown error - please try again after some time',
} as const;

/**
 * Maps a refusal to a `/process` answer (spec 7.1). Every one of them is HTTP 200: the client
 * libraries read `status` and `message` from the body, and many HTTP clients throw on 4xx
 * before the body is read. A revoked (inactive) token gets the spec's invalid-token text,
 * the only authentication message spec 7.1 has; the log says which it was.
 */
export function geoRefusal(reason: AccessRefusal | ChargeRefusal): Refusal {
  switch (reason) {
    case 'INVALID_TOKEN':
    case 'INACTIVE_TOKEN':
      return { status: 200, message: GeoMessage.invalidToken };
    case 'REFERRER':
      return { status: 200, message: ServerMessage.referrerRefused };
    case 'IP':
      return { status: 200, message: ServerMessage.ipRefused };
    case 'RATELIMITED_DAY':
      return { status: 200, message: GeoMessage.balanceOver };
    case 'RATELIMITED_MINUTE':
      return { status: 200, message: ServerMessage.rateLimitedMinute, headers: { 'retry-after': '60' } };
    case 'RATELIMITED_SECOND':
      return { status: 200, message: ServerMessage.rateLimitedSecond, headers: { 'retry-after': '1' } };
    case 'SLOTS':
      return { status: 200, message: ServerMessage.slots };
  }
}

/**
 * Maps a refusal to the codes of spec 7.2 (balance now; geocoding and timezone later).
 * HTTP 200 except `ACCESS_RESTRICTED` (403, as the spec gives for geocoding scopes).
 */
export function codeRefusal(reason: AccessRefusal | ChargeRefusal): Refusal {
  switch (reason) {
    case 'INVALID_TOKEN':
    case 'INACTIVE_TOKEN':
      return { status: 200, message: reason };
    case 'REFERRER':
    case 'IP':
      return { status: 403, message: 'ACCESS_RESTRICTED' };
    case 'RATELIMITED_DAY':
      return { status: 200, message: reason };
    case 'RATELIMITED_MINUTE':
      return { status: 200, message: reason, headers: { 'retry-after': '60' } };
    case 'RATELIMITED_SECOND':
      return { status: 200, message: reason, headers: { 'retry-after': '1' } };
    case 'SLOTS':
      return { status: 200, message: 'RATELIMITED_DAY' };
  }
}

/** A spec 7.2 error body. */
export type CodeError = { status: 'error'; message: string };

/** Answers `reason` with the codes of spec 7.2: {@link codeRefusal}'s status and headers on `reply`, its body returned. */
export function replyCodeRefusal(
  reply: Pick<FastifyReply, 'code' | 'headers'>,
  reason: AccessRefusal | ChargeRefusal,
): CodeError {
  const refusal = codeRefusal(reason);
  reply.code(refusal.status);
  if (refusal.headers) reply.headers(refusal.headers);
  return { status: 'error', message: refusal.message };
}

/**
 * {@link authorize} for the routes that answer with the codes of spec 7.2 (balance, geocoding,
 * timezone, sync): the caller's token and its record, or the refusal already answered on
 * `reply` (logged), `ACCESS_RESTRICTED` with HTTP 403 when a `scope` is asked for that the
 * token lacks.
 */
export function authorizeForCodes(
  tokens: Pick<TokenAccess, 'get'>,
  token: string | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  scope?: Scope,
): { ok: true; token: string; record: TokenRecord } | { ok: false; body: CodeError } {
  const access = authorize(tokens, token, callerOf(request));
  if (!access.ok) {
    request.log.info({ token: tokenPreview(token), reason: access.reason }, 'refused');
    return { ok: false, body: replyCodeRefusal(reply, access.reason) };
  }
  if (scope !== undefined && !access.record.scopes.includes(scope)) {
    reply.code(403);
    return { ok: false, body: { status: 'error', message: 'ACCESS_RESTRICTED' } };
  }
  // authorize refuses a missing token, so an allowed caller has one.
  return { ok: true, token: token as string, record: access.record };
}

/**
 * Query parameters whose values logs may show as sent: what the routes read besides tokens.
 * Every other parameter's value (`token`, `key`, and whatever a client invents: `Token`,
 * `access_token`...) is cut to its first 4 characters.
 */
const LOGGED_PARAMS = new Set([
  'q',
  'lat',
  'lon',
  'zoom',
  'limit',
  'countrycodes',
  'viewbox',
  'accept-language',
  'since',
  'until',
  'cursor',
]);

/**
 * A run of characters a token is made of (base64url), at least as long as a token's 43 minus a
 * few: wherever a token is pasted (a path, a search text, a parameter name), it is such a run.
 * Shorter runs, such as UUIDs (36) and long words, are left alone.
 */
const TOKEN_RUN = /[A-Za-z0-9_-]{40,}/g;

/** `text` with `%XX` escapes (and `+`, in a query) decoded; an escape that is not UTF-8 is decoded alone, as Latin-1. */
function looseDecode(text: string, plus: boolean): string {
  const t = plus ? text.replace(/\+/g, ' ') : text;
  if (!t.includes('%')) return t;
  return t.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      );
    }
  });
}

/** One part of a URL for the log: as sent, or decoded with token-shaped runs cut to their preview and encoded again. */
function maskRuns(raw: string, plus: boolean): string {
  const decoded = looseDecode(raw, plus);
  TOKEN_RUN.lastIndex = 0;
  if (!TOKEN_RUN.test(decoded)) return raw;
  return encodeURIComponent(decoded.replace(TOKEN_RUN, (run) => tokenPreview(run)));
}

/**
 * A request URL as logs show it: no token in any spelling. Query values are masked by name
 * (all but {@link LOGGED_PARAMS}) and by value (a token-shaped run anywhere, also in the path,
 * a parameter name or a kept value), after percent-decoding, so `%74oken=`, `Token=`,
 * `?q=TOKEN` and `/TOKEN` are all cut to the token's first 4 characters.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = path
    .split('/')
    .map((segment) => maskRuns(segment, false))
    .join('/');
  if (q < 0) return safePath;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const rawName = eq < 0 ? part : part.slice(0, eq);
      const name = maskRuns(rawName, true);
      if (eq < 0) return name;
      const rawValue = part.slice(eq + 1);
      if (LOGGED_PARAMS.has(looseDecode(rawName, true))) return `${name}=${maskRuns(rawValue, true)}`;
      if (rawValue === '') return `${name}=`;
      return `${name}=${encodeURIComponent(tokenPreview(looseDecode(rawValue, true)))}`;
    });
  return `${safePath}?${parts.join('&')}`;
}
