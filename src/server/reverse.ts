/**
 * `GET /v2/reverse` (and `/v2/reverse.php`): the address at a point (spec 4.3, 2.9).
 * Needs the token scope `geocoding:reverse` (HTTP 403 `ACCESS_RESTRICTED` without it) and
 * charges the geocoding balance for answers only, through the shared metered flow.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import type { TokenAccess } from './ledger.js';
import { meteredAnswer } from './metered.js';
import { acceptLanguageOf, queryParam } from './query.js';

/** Paths of the route: the spec's and the one existing client libraries call. */
export const REVERSE_PATHS = ['/v2/reverse', '/v2/reverse.php'] as const;

/** Registers the reverse geocoding route on `app`. */
export function registerReverse(app: FastifyInstance, deps: { engine: Engine; tokens: TokenAccess }): void {
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    meteredAnswer(deps.tokens, request, reply, 'geocoding:reverse', () => {
      const lat = queryParam(request, 'lat');
      const lon = queryParam(request, 'lon');
      if (lat === undefined || lon === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
      const acceptLanguage = acceptLanguageOf(request);
      return deps.engine.reverse({ lat, lon, zoom: queryParam(request, 'zoom'), acceptLanguage });
    });
  for (const path of REVERSE_PATHS) app.get(path, handler);
}
