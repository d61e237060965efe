/**
 * `GET /v2/timezone` (and `/v2/timezone.php`): the timezone at a point (spec 4.4, 2.10).
 * Metered against the token's geocoding balance, like the geocoding endpoints its responses
 * resemble (2.11 has no timezone balance); no scope is needed (spec 5.7 names none).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import type { TokenAccess } from './ledger.js';
import { meteredAnswer } from './metered.js';
import { queryParam } from './query.js';

/** Paths of the route: the spec's and the one existing client libraries call. */
export const TIMEZONE_PATHS = ['/v2/timezone', '/v2/timezone.php'] as const;

/** Registers the timezone route on `app`. */
export function registerTimezone(app: FastifyInstance, deps: { engine: Engine; tokens: TokenAccess }): void {
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    meteredAnswer(deps.tokens, request, reply, undefined, () => {
      const lat = queryParam(request, 'lat');
      const lon = queryParam(request, 'lon');
      if (lat === undefined || lon === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
      return deps.engine.timezone({ lat, lon });
    });
  for (const path of TIMEZONE_PATHS) app.get(path, handler);
}
