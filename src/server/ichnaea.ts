/**
 * The Ichnaea (Google Geolocation API style) route family: `POST /v1/geolocate`,
 * `POST /v1/country`, `POST /v2/geosubmit` and the older `POST /v1/search`, with the key in
 * `?key=`, as one Fastify plugin
 * answering that interface's errors (`{error: {errors, code, message}}` with the HTTP status
 * `code`). Bodies are translated into `/process` requests and validated and solved as those are
 * (src/locating/ichnaea.ts); tokens, balances and limits are those of `/process`: a located
 * geolocate or country answer is charged once to the geolocation balance, durably, before it
 * leaves; errors and submissions are never charged. Statuses and decisions: docs/server.md.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import { type LearnBatcher, toSubmission } from '../learning/submissions.js';
import {
  countryAnswer,
  geolocateAnswer,
  type IchnaeaError,
  IchnaeaErrors,
  ichnaeaError,
  isIchnaeaError,
  parseJsonText,
  readGeolocate,
  readGeosubmit,
  readSearch,
  searchAnswer,
} from '../locating/ichnaea.js';
import type { LocateRequest } from '../locating/request/index.js';
import type { ProcessResponse } from '../locating/response.js';
import type { ObservationStorage } from '../observations/index.js';
import type { TokenRecord } from '../tokens/index.js';
import { type AccessRefusal, authorize, type ChargeRefusal, callerOf, tokenPreview } from './auth.js';
import { type ErrorShape, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';
import { queryParam } from './query.js';

/** What the routes need: those of `/process`. */
export interface IchnaeaDeps {
  engine: Engine;
  tokens: TokenAccess;
  observations: ObservationStorage;
  /** Feeds geosubmit items into the engine's learned-station overlay; absent: stored only. */
  learner?: LearnBatcher;
}

/** The routes' paths; `/v1/search` takes the interface's first, older body shape. */
export const ICHNAEA_PATHS = {
  geolocate: '/v1/geolocate',
  country: '/v1/country',
  search: '/v1/search',
  geosubmit: '/v2/geosubmit',
} as const;

/** Fastify's own errors on these routes (a body too large or unreadable, a fault) in the interface's shape. */
export const ICHNAEA_ERRORS: ErrorShape = {
  tooLarge: 'Request body too large',
  invalid: 'Parse Error',
  unknown: 'Backend error; please try again after some time.',
  body: (message, status = 400) => {
    if (status === 413) return { ...IchnaeaErrors.tooLarge() };
    if (status >= 500) return { ...ichnaeaError(status, 'global', 'backendError', message) };
    return { ...ichnaeaError(status, 'global', 'parseError', message) };
  },
};

/** The route family as a Fastify plugin: its routes and its error shape. */
export function ichnaeaRoutes(deps: IchnaeaDeps): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, ICHNAEA_ERRORS);
    app.post(ICHNAEA_PATHS.geolocate, (request, reply) =>
      handleLocate(deps, request, reply, readLocate, (res) => shaped(geolocateAnswer(res))),
    );
    app.post(ICHNAEA_PATHS.country, (request, reply) =>
      handleLocate(deps, request, reply, readLocate, (res) =>
        shaped(countryAnswer(res, (lat, lon) => deps.engine.reverse({ lat, lon, zoom: 0 }))),
      ),
    );
    app.post(ICHNAEA_PATHS.search, (request, reply) =>
      handleLocate(deps, request, reply, readSearchBody, (res) => {
        const body = searchAnswer(res);
        return { status: 200, body, charge: body.status === 'ok' };
      }),
    );
    app.post(ICHNAEA_PATHS.geosubmit, (request, reply) => handleGeosubmit(deps, request, reply));
  };
}

/** Answers `error` with its own HTTP status and any `headers`. */
function fail(reply: FastifyReply, error: IchnaeaError, headers?: Record<string, string>): IchnaeaError {
  reply.code(error.error.code);
  if (headers) reply.headers(headers);
  return error;
}

/**
 * A refused key or charge as the interface's error: an unknown, missing or revoked key is
 * `keyInvalid` (400); a referrer or IP outside the key's restrictions is 403; the daily balance
 * is `dailyLimitExceeded` (403); the per-second and per-minute limits are 429 with `Retry-After`.
 */
function refuse(reply: FastifyReply, reason: AccessRefusal | ChargeRefusal): IchnaeaError {
  switch (reason) {
    case 'INVALID_TOKEN':
    case 'INACTIVE_TOKEN':
      return fail(reply, IchnaeaErrors.keyInvalid());
    case 'REFERRER':
    case 'IP':
      return fail(reply, IchnaeaErrors.restricted());
    case 'RATELIMITED_MINUTE':
      return fail(reply, IchnaeaErrors.rateLimit(), { 'retry-after': '60' });
    case 'RATELIMITED_SECOND':
      return fail(reply, IchnaeaErrors.rateLimit(), { 'retry-after': '1' });
    case 'RATELIMITED_DAY':
    case 'SLOTS':
      // No request of this interface names a device, so SLOTS cannot come; it is a used-up plan.
      return fail(reply, IchnaeaErrors.dailyLimit());
  }
}

/** The caller's key and its record, or the refusal already answered on `reply`. */
function keyOf(
  tokens: TokenAccess,
  request: FastifyRequest,
  reply: FastifyReply,
): { ok: true; key: string; record: TokenRecord } | { ok: false; body: IchnaeaError } {
  const key = queryParam(request, 'key');
  const access = authorize(tokens, key, callerOf(request));
  if (!access.ok) {
    request.log.info({ token: tokenPreview(key), reason: access.reason }, 'refused');
    return { ok: false, body: refuse(reply, access.reason) };
  }
  return { ok: true, key: key as string, record: access.record };
}

/** The body text read as JSON; undefined when it is not JSON. */
function jsonOf(request: FastifyRequest): { value: unknown } | undefined {
  return parseJsonText(typeof request.body === 'string' ? request.body : '');
}

/** A request read from a body (undefined: not JSON), or the answer that refuses it. */
type Read = { ok: true; request: LocateRequest } | { ok: false; status: number; body: object };

/** An answer: its HTTP status, its body, and whether it is charged (a located answer). */
interface Shaped {
  status: number;
  body: object;
  charge: boolean;
}

/** The geolocate and country body: the interface's errors with their own status. */
function readLocate(json: { value: unknown } | undefined): Read {
  const read = json === undefined ? undefined : readGeolocate(json.value);
  if (read?.ok) return read;
  const error = read?.error ?? IchnaeaErrors.parse();
  return { ok: false, status: error.error.code, body: error };
}

/** The `/v1/search` body: 400 `{errors}` for a bad one, `not_found` (200) for one with nothing to locate with. */
function readSearchBody(json: { value: unknown } | undefined): Read {
  if (json === undefined) return { ok: false, status: 400, body: { errors: { body: 'Parse Error' } } };
  return readSearch(json.value);
}

/** A geolocate or country answer: charged when located, else the error with its status. */
function shaped(answer: object): Shaped {
  return isIchnaeaError(answer)
    ? { status: answer.error.code, body: answer, charge: false }
    : { status: 200, body: answer, charge: true };
}

/**
 * `/v1/geolocate`, `/v1/country` and `/v1/search`: key, body (`read`), balance, the `/process`
 * solve (with the engine's remote policy), `shape` of its answer, then the charge of a located
 * answer.
 */
async function handleLocate(
  deps: IchnaeaDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  read: (json: { value: unknown } | undefined) => Read,
  shape: (res: ProcessResponse) => Shaped,
): Promise<object> {
  const { engine, tokens } = deps;
  const access = keyOf(tokens, request, reply);
  if (!access.ok) return access.body;
  const key = access.key;
  const parsed = read(jsonOf(request));
  if (!parsed.ok) {
    reply.code(parsed.status);
    return parsed.body;
  }
  const req = parsed.request;
  if (req.fallbacks.ipf === 1 && req.ip === undefined) req.ip = callerOf(request).ip;
  // Cheap refusal before any solving; the charge below stays the authority.
  if ((await tokens.balance(key, 'geolocation')) <= 0) return fail(reply, IchnaeaErrors.dailyLimit());
  const answer = shape(await engine.locateParsed(req));
  if (answer.charge) {
    const outcome = await tokens.charge(key, 'geolocation');
    if (!outcome.ok) {
      request.log.info({ token: tokenPreview(key), reason: outcome.reason }, 'not charged');
      return refuse(reply, outcome.reason);
    }
  }
  reply.code(answer.status);
  return answer.body;
}

/**
 * `/v2/geosubmit`: a key with the GPS feature, every item valid (else nothing is stored), the
 * items stored in one transaction, then learned; answers `{}`. Not charged.
 */
async function handleGeosubmit(
  deps: IchnaeaDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Record<string, never> | IchnaeaError> {
  const { tokens, observations, learner } = deps;
  const access = keyOf(tokens, request, reply);
  if (!access.ok) return access.body;
  if (!access.record.gps) return fail(reply, IchnaeaErrors.submitNotEnabled());
  const json = jsonOf(request);
  if (json === undefined) return fail(reply, IchnaeaErrors.parse());
  const read = readGeosubmit(json.value);
  if (!read.ok) {
    request.log.info(
      { token: tokenPreview(access.key), error: read.error.error.message },
      'geosubmit refused',
    );
    return fail(reply, read.error);
  }
  const { items, ignored } = read.batch;
  const receivedAt = Date.now();
  try {
    await observations.addAll(
      items.map((req) => ({ receivedAt, token: access.key, gps: req.gps, cells: req.cells, wifi: req.wifi })),
    );
  } catch (err) {
    request.log.error({ err, token: tokenPreview(access.key) }, 'storing geosubmit items failed');
    return fail(reply, IchnaeaErrors.backend());
  }
  if (learner && items.length > 0) {
    // Stored first: a batch that could not be stored is not learned either.
    try {
      await Promise.all(items.map((req) => learner.submit(toSubmission(req, receivedAt))));
    } catch (err) {
      request.log.error({ err, token: tokenPreview(access.key) }, 'learning geosubmit items failed');
    }
  }
  if (ignored > 0)
    request.log.info({ stored: items.length, ignored }, 'geosubmit items with nothing to learn');
  return {};
}
