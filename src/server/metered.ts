/**
 * The flow shared by the geocoding-family GET routes (`/v2/timezone`, `/v2/reverse`): token,
 * restrictions, scope, the request's own validation, the daily balance, the answer, and the
 * charge against the token's geocoding balance. Errors are the codes of spec 7.2 with HTTP 200,
 * except `ACCESS_RESTRICTED` (403) and `UNKNOWN_ERROR` (500); see docs/geocoding.md.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Scope } from '../tokens/index.js';
import { authorize, callerOf, codeRefusal, tokenPreview } from './auth.js';
import { queryParam } from './balance.js';
import type { TokenAccess } from './ledger.js';

/** A spec 7.2 error body. */
export type CodeError = { status: 'error'; message: string };

/** What a route computes once the caller is allowed: the body without `balance`. */
export type Answer = ({ status: 'ok' } & Record<string, unknown>) | CodeError;

/**
 * Runs the shared flow. `answer` is called only for an allowed caller with balance left; an
 * `ok` answer is charged once (durably, before the reply) and gets `balance` after the charge.
 * Errors are never charged.
 */
export async function meteredAnswer(
  tokens: TokenAccess,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: Scope | undefined,
  answer: () => Answer,
): Promise<Record<string, unknown>> {
  const token = queryParam(request, 'token');
  const access = authorize(tokens, token, callerOf(request));
  if (!access.ok) {
    request.log.info({ token: tokenPreview(token), reason: access.reason }, 'refused');
    const refusal = codeRefusal(access.reason);
    reply.code(refusal.status);
    return { status: 'error', message: refusal.message };
  }
  if (scope !== undefined && !access.record.scopes.includes(scope)) {
    reply.code(403);
    return { status: 'error', message: 'ACCESS_RESTRICTED' };
  }
  const t = token as string;
  const body = answer();
  if (body.status !== 'ok') {
    if (body.message === 'UNKNOWN_ERROR') reply.code(500);
    return body;
  }
  const outcome = await tokens.charge(t, 'geocoding');
  if (!outcome.ok) {
    request.log.info({ token: tokenPreview(t), reason: outcome.reason }, 'not charged');
    const refusal = codeRefusal(outcome.reason);
    reply.code(refusal.status);
    if (refusal.headers) reply.headers(refusal.headers);
    return { status: 'error', message: refusal.message };
  }
  const { status, ...rest } = body;
  return { status, balance: outcome.balance, ...rest };
}
