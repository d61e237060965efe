/**
 * `POST /v2/process` (and `/v2/process.php`): geolocation with tokens, balances, restrictions
 * and GPS submissions (spec 2.2, 2.5, 2.8, 4.1, 7.1).
 *
 * The body arrives as text so that `parseRequestText` applies the spec's body rules (an
 * unquoted number with a leading zero is `Invalid request`). Order of decisions:
 * parse (a missing token first), token, restrictions, GPS feature, admission (the daily balance
 * and the per-second and per-minute limits, which every call that does work counts against,
 * `geolocation: 0` included), solve, charge, GPS store and live learning. Solving applies the engine's remote policy, if any (docs/remote.md). Only a located answer to a `geolocation: 1` request is charged, once, and the
 * charge is durable before the answer leaves.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import { type LearnBatcher, mentionsOptOut, toSubmission, withoutOptedOut } from '../learning/submissions.js';
import { type LocateRequest, parseRequest, parseRequestText } from '../locating/request/index.js';
import { jsonWithinLimits } from '../locating/request/limits.js';
import type { ProcessResponse } from '../locating/response.js';
import type { ObservationStorage } from '../observations/index.js';
import { authorize, callerOf, geoRefusal, type Refusal, ServerMessage, tokenPreview } from './auth.js';
import { type ErrorShape, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';

/** What the route needs. */
export interface ProcessDeps {
  engine: Engine;
  tokens: TokenAccess;
  observations: ObservationStorage;
  /** Feeds `gps_sandbox: 0` submissions into the engine's learned-station overlay; absent: stored only. */
  learner?: LearnBatcher;
}

/** Paths of the route: the spec's and the one existing client libraries call. */
export const PROCESS_PATHS = ['/v2/process', '/v2/process.php'] as const;

/** Spec 7.1's errors: `{status, message, balance}`, with the service's words (docs/server.md). */
export const PROCESS_ERRORS: ErrorShape = {
  tooLarge: ServerMessage.bodyTooLarge,
  invalid: 'Invalid request',
  unknown: ServerMessage.unknownError,
  body: (message) => ({ status: 'error', message, balance: 0 }),
};

/** The geolocation route family as a Fastify plugin: its routes and its error shape. */
export function geolocationRoutes(deps: ProcessDeps): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, PROCESS_ERRORS);
    const handler = (request: FastifyRequest, reply: FastifyReply) => handleProcess(deps, request, reply);
    for (const path of PROCESS_PATHS) app.post(path, handler);
  };
}

/** An error answer of spec 7.1: `status`, `message`, `balance`. */
function geoError(
  reply: FastifyReply,
  refusal: Refusal,
  balance: number,
  extra?: Partial<ProcessResponse>,
): ProcessResponse {
  reply.code(refusal.status);
  if (refusal.headers) reply.headers(refusal.headers);
  return { status: 'error', message: refusal.message, balance, ...extra };
}

/**
 * The `token` of a body that failed validation, if it names one: used only to answer
 * authentication first and to report the token's balance. A body that is not JSON (an unquoted
 * leading zero, a cut-off body) or over the shape limits still names its token in the usual
 * spelling.
 */
function tokenOfText(text: string): string | undefined {
  let token: unknown;
  // A body over the shape limits is never parsed, here either: its token is read from the text.
  let value: unknown = NOT_PARSED;
  if (jsonWithinLimits(text)) {
    try {
      value = JSON.parse(text);
    } catch {}
  }
  if (value === NOT_PARSED) token = TOKEN_IN_TEXT.exec(text)?.[1];
  else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    token = (value as Record<string, unknown>).token;
  }
  if (typeof token === 'string' && token.trim() !== '') return token.trim();
  return undefined;
}

const NOT_PARSED = Symbol('not parsed');

/** `"token": "..."` in a body that is not valid JSON (a token has no quotes or escapes). */
const TOKEN_IN_TEXT = /"token"\s*:\s*"([^"\\]{1,256})"/;

async function handleProcess(
  deps: ProcessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<ProcessResponse> {
  const { engine, tokens, observations, learner } = deps;
  const text = typeof request.body === 'string' ? request.body : '';
  const parsed = parseRequestText(text, { requireToken: true });
  const caller = callerOf(request);

  if (!parsed.ok) {
    // Authentication is answered before parsing errors; a known token learns its balance.
    const token = tokenOfText(text);
    if (token === undefined) return geoError(reply, { status: 200, message: parsed.message }, 0);
    const access = authorize(tokens, token, caller);
    if (!access.ok) {
      request.log.info({ token: tokenPreview(token), reason: access.reason }, 'refused');
      return geoError(reply, geoRefusal(access.reason), 0);
    }
    // Reporting the balance is within the token's limits too, as on every other path.
    const admitted = await tokens.admit(token, 'geolocation');
    if (!admitted.ok) return geoError(reply, geoRefusal(admitted.reason), admitted.balance);
    return geoError(reply, { status: 200, message: parsed.message }, admitted.balance);
  }

  const req = parsed.request;
  const token = req.token as string;
  const access = authorize(tokens, token, caller);
  if (!access.ok) {
    request.log.info({ token: tokenPreview(token), reason: access.reason }, 'refused');
    return geoError(reply, geoRefusal(access.reason), 0);
  }
  const record = access.record;
  const sentGps = req.gps.length > 0;
  if (sentGps && !record.gps) {
    return geoError(
      reply,
      { status: 200, message: ServerMessage.gpsNotEnabled },
      await balanceOf(tokens, token),
    );
  }
  if (req.fallbacks.ipf === 1 && req.ip === undefined) req.ip = caller.ip;

  // Every call that does work uses the token's limits, `geolocation: 0` too (it stores and
  // learns, and reports the balance); the charge below stays the authority on the balance.
  const admitted = await tokens.admit(token, 'geolocation');
  if (!admitted.ok) {
    request.log.info({ token: tokenPreview(token), reason: admitted.reason }, 'not admitted');
    return geoError(reply, geoRefusal(admitted.reason), admitted.balance);
  }

  let answer: ProcessResponse;
  if (req.geolocation === 1) {
    // The remote's balance belongs to the remote token; this caller sees its own below.
    const { balance: _remote, balance_slots: _remoteSlots, ...solved } = await engine.locateParsed(req);
    answer = solved;
  } else {
    answer = { status: 'ok' };
  }

  let balance: number | undefined;
  let balanceSlots: number | undefined;
  if (answer.status === 'ok' && req.geolocation === 1) {
    const outcome = await tokens.charge(token, 'geolocation', {
      admitted: true,
      ...(req.id === undefined ? {} : { deviceId: req.id }),
    });
    if (!outcome.ok) {
      request.log.info({ token: tokenPreview(token), reason: outcome.reason }, 'not charged');
      const extra = outcome.reason === 'SLOTS' ? { balance_slots: -1 } : undefined;
      return geoError(reply, geoRefusal(outcome.reason), outcome.balance, extra);
    }
    balance = outcome.balance;
    balanceSlots = outcome.balanceSlots;
  }

  let gpsStatus: 'ok' | 'error' = 'ok';
  if (sentGps && req.gpsSandbox === 0) {
    const sighting = learnableOf(req, text);
    // Stored and learned side by side: the answer waits for the slower commit, not the sum.
    const learned = learner ? learnGps(learner, sighting, token, request) : undefined;
    gpsStatus = await storeGps(observations, sighting, token, request);
    await learned;
  }

  const out: ProcessResponse = { status: answer.status };
  if (answer.message !== undefined) out.message = answer.message;
  out.balance = balance ?? (await balanceOf(tokens, token));
  if (balanceSlots !== undefined) out.balance_slots = balanceSlots;
  Object.assign(out, answer);
  if (req.metadata === 1) {
    out.metadata = sentGps ? { gps: { status: gpsStatus, gps_sandbox: req.gpsSandbox } } : {};
  }
  return out;
}

/**
 * The request as a GPS submission: without access points whose `ssid` opted out (`_nomap`),
 * which the validated request no longer names. Bodies that mention no opt-out are not read twice.
 */
function learnableOf(req: LocateRequest, text: string): LocateRequest {
  if (!mentionsOptOut(text)) return req;
  const again = parseRequest(withoutOptedOut(JSON.parse(text)), { requireToken: true });
  return again.ok ? { ...req, wifi: again.request.wifi } : req;
}

/** Learns the submission into the running engine; a failure is logged, the answer stands. */
async function learnGps(
  learner: LearnBatcher,
  req: LocateRequest,
  token: string,
  request: FastifyRequest,
): Promise<void> {
  try {
    // The token (and device) is the submission's source: one voice, capped (docs/learning.md).
    await learner.submit(toSubmission(req, Date.now(), { token, deviceId: req.id }));
  } catch (err) {
    request.log.error({ err, token: tokenPreview(token) }, 'learning GPS observations failed');
  }
}

function balanceOf(tokens: TokenAccess, token: string): Promise<number> | number {
  return tokens.balance(token, 'geolocation');
}

/** Stores the GPS fixes durably (gps_sandbox 0); a failure shows in metadata, not as a lost answer. */
async function storeGps(
  observations: ObservationStorage,
  req: LocateRequest,
  token: string,
  request: FastifyRequest,
): Promise<'ok' | 'error'> {
  try {
    const o: Parameters<ObservationStorage['add']>[0] = {
      receivedAt: Date.now(),
      token,
      gps: req.gps,
      cells: req.cells,
      wifi: req.wifi,
    };
    if (req.id !== undefined) o.deviceId = req.id;
    await observations.add(o);
    return 'ok';
  } catch (err) {
    request.log.error({ err, token: tokenPreview(token) }, 'storing GPS observations failed');
    return 'error';
  }
}
