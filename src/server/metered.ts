/**
 * The flow shared by the geocoding-family GET routes (`/v2/search`, `/v2/reverse`,
 * `/v2/timezone`): token, restrictions, scope, admission (the daily balance and the per-second
 * and per-minute limits, which every call that does work counts against, billed or not), the
 * request's own validation and the answer, and the charge against the token's geocoding balance. Errors are the codes of spec 7.2 with HTTP 200,
 * except `ACCESS_RESTRICTED` (403) and `UNKNOWN_ERROR` (500); see docs/geocoding.md.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Scope } from '../tokens/index.js';
import { authorizeForCodes, type CodeError, replyCodeRefusal, tokenPreview } from './auth.js';
import type { TokenAccess } from './ledger.js';
import { queryParam } from './query.js';

/** What a route computes once the caller is allowed: the body without `balance`. */
export type Answer = ({ status: 'ok' } & Record<string, unknown>) | CodeError;

/**
 * Runs the shared flow. `answer` is called only for an allowed caller admitted by the token
 * store (balance left, within its rate limits: a search that matches nothing uses the limits
 * too); an `ok` answer is charged once (durably, before the reply) and gets `balance` after the
 * charge. Errors are never charged.
 */
export async function meteredAnswer(
  tokens: TokenAccess,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: Scope | undefined,
  answer: () => Answer,
): Promise<Record<string, unknown>> {
  const access = authorizeForCodes(tokens, queryParam(request, 'token'), request, reply, scope);
  if (!access.ok) return access.body;
  const t = access.token;
  const admitted = await tokens.admit(t, 'geocoding');
  if (!admitted.ok) {
    request.log.info({ token: tokenPreview(t), reason: admitted.reason }, 'not admitted');
    return replyCodeRefusal(reply, admitted.reason);
  }
  const body = answer();
  if (body.status !== 'ok') {
    if (body.message === 'UNKNOWN_ERROR') reply.code(500);
    return body;
  }
  const outcome = await tokens.charge(t, 'geocoding', { admitted: true });
  if (!outcome.ok) {
    request.log.info({ token: tokenPreview(t), reason: outcome.reason }, 'not charged');
    return replyCodeRefusal(reply, outcome.reason);
  }
  const { status, ...rest } = body;
  return { status, balance: outcome.balance, ...rest };
}
