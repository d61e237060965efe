/**
 * `GET /v2/balance` (and `/v2/balance.php`): the remaining requests of the day (spec 2.11, 4.5).
 * At most one request per second per token (spec 8), else `RATELIMITED_SECOND`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authorizeForCodes, replyCodeRefusal } from './auth.js';
import type { TokenAccess } from './ledger.js';
import { queryParam } from './query.js';

/** Paths of the route: the spec's and the one existing client libraries call. */
export const BALANCE_PATHS = ['/v2/balance', '/v2/balance.php'] as const;

/** The rate-limit bucket of the balance endpoint in the token store. */
export const BALANCE_BUCKET = 'balance';

/** The balance object of spec 2.11, or a spec 7.2 error. */
export type BalanceResponse =
  | { status: 'ok'; balance_geolocation: number; balance_geocoding: number }
  | { status: 'error'; message: string };

/** Registers the balance route on `app`. */
export function registerBalance(app: FastifyInstance, deps: { tokens: TokenAccess }): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<BalanceResponse> => {
    const { tokens } = deps;
    const access = authorizeForCodes(tokens, queryParam(request, 'token'), request, reply);
    if (!access.ok) return access.body;
    const t = access.token;
    if (!(await tokens.hit(t, BALANCE_BUCKET, 1))) return replyCodeRefusal(reply, 'RATELIMITED_SECOND');
    return {
      status: 'ok',
      balance_geolocation: await tokens.balance(t, 'geolocation'),
      balance_geocoding: await tokens.balance(t, 'geocoding'),
    };
  };
  for (const path of BALANCE_PATHS) app.get(path, handler);
}
