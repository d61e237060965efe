/**
 * `GET /v2/sync`: stations this server's database changed in a window, for another
 * Whereabouts server to pull (`whereabouts sync --from whereabouts+http://…`). Needs the token
 * scope `sync` (HTTP 403 `ACCESS_RESTRICTED` without it); not metered, as it answers servers
 * rather than devices. Errors are the codes of spec 7.2; the wire format is in docs/sync.md.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../engine.js';
import { SyncHeader } from '../sync/wire.js';
import { authorizeForCodes, replyCodeRefusal } from './auth.js';
import { CODE_ERRORS, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';
import { queryParam } from './query.js';

/** Default and largest stations per page. */
export const SYNC_PAGE_DEFAULT = 50_000;
export const SYNC_PAGE_MAX = 200_000;
/** Stations looked at per page, changed or not: bounds a page's time on a large database. */
const SYNC_SCAN_PER_PAGE = 4_000_000;

const DAY_S = 86_400;

/** A non-negative whole number of at most 12 digits, or undefined. */
function wholeNumber(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,12}$/.test(text) ? Number(text) : undefined;
}

/** The sync route as a Fastify plugin, with spec 7.2's error shape. */
export function syncRoutes(deps: {
  engine: Engine;
  tokens: TokenAccess;
  clock?: () => number;
}): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, CODE_ERRORS);
    const clock = deps.clock ?? Date.now;
    app.get('/v2/sync', async (request: FastifyRequest, reply: FastifyReply) => {
      const access = authorizeForCodes(deps.tokens, queryParam(request, 'token'), request, reply, 'sync');
      if (!access.ok) return access.body;
      // Unmetered, but work: it counts against the token's per-second and per-minute limits.
      const admitted = await deps.tokens.admit(access.token);
      if (!admitted.ok) return replyCodeRefusal(reply, admitted.reason);
      // Only whole UTC days: `updated` is kept to the day, so a station changed later today
      // would carry the same day as one changed before this pull and could not be told apart.
      const today = Math.floor(clock() / 1000 / DAY_S) * DAY_S;
      const since = wholeNumber(queryParam(request, 'since'));
      const untilText = queryParam(request, 'until');
      const until = untilText === undefined ? today : wholeNumber(untilText);
      const limitText = queryParam(request, 'limit');
      const limit = limitText === undefined ? SYNC_PAGE_DEFAULT : wholeNumber(limitText);
      if (
        since === undefined ||
        until === undefined ||
        until > today ||
        limit === undefined ||
        limit < 1 ||
        limit > SYNC_PAGE_MAX
      ) {
        return { status: 'error', message: 'INVALID_REQUEST' };
      }
      let page: Awaited<ReturnType<Engine['stationChanges']>>;
      try {
        page = await deps.engine.stationChanges({
          since,
          until,
          cursor: queryParam(request, 'cursor'),
          maxStations: limit,
          maxScanned: SYNC_SCAN_PER_PAGE,
          // A receiver that reads learned cells' advances says so; others get the level
          // file they have always read (docs/sync.md).
          advances: queryParam(request, 'advances') === '1',
        });
      } catch (err) {
        if ((err as Error).message === 'invalid cursor')
          return { status: 'error', message: 'INVALID_REQUEST' };
        throw err;
      }
      reply.header(SyncHeader.until, String(until));
      reply.header(SyncHeader.stations, String(page.stations));
      if (page.next) reply.header(SyncHeader.next, page.next);
      if (page.kind) reply.header(SyncHeader.kind, page.kind);
      reply.header('cache-control', 'no-store');
      reply.type('application/gzip');
      return reply.send(page.body);
    });
  };
}
