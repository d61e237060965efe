/**
 * `GET /v2/search` (and `/v2/search.php`): places matching free text (spec 4.2, 2.9).
 * Needs the token scope `geocoding:forward` (HTTP 403 `ACCESS_RESTRICTED` without it) and
 * charges the geocoding balance for answers only, through the shared metered flow.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import type { TokenAccess } from './ledger.js';
import { meteredAnswer } from './metered.js';
import { acceptLanguageOf, queryParam } from './query.js';

/** Paths of the route: the spec's and the one existing client libraries call. */
export const SEARCH_PATHS = ['/v2/search', '/v2/search.php'] as const;

/** Registers the forward geocoding route on `app`. */
export function registerSearch(app: FastifyInstance, deps: { engine: Engine; tokens: TokenAccess }): void {
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    meteredAnswer(deps.tokens, request, reply, 'geocoding:forward', () => {
      const q = queryParam(request, 'q');
      if (q === undefined) return { status: 'error', message: 'INVALID_REQUEST' };
      const acceptLanguage = acceptLanguageOf(request);
      return deps.engine.search({
        q,
        limit: queryParam(request, 'limit'),
        countrycodes: queryParam(request, 'countrycodes'),
        viewbox: queryParam(request, 'viewbox'),
        acceptLanguage,
      });
    });
  for (const path of SEARCH_PATHS) app.get(path, handler);
}
