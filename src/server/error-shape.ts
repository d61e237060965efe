/**
 * The errors Fastify raises before a route's handler runs (a body too large or unreadable, an
 * unexpected throw) in the words and shape of the route family they belong to. Each family's
 * plugin sets its own ({@link useErrorShape}); what belongs to no family (an undecodable URL,
 * which matches no route) gets {@link CODE_ERRORS}.
 *
 * A token store that cannot answer ({@link StoreUnavailableError}: PostgreSQL down, restarting
 * or too slow) is HTTP 503 with `Retry-After: 1` and the family's server-error message (spec 7.1
 * and 7.2's `UNKNOWN_ERROR`, 7.4's `Unknown error`): nothing was charged, the client may retry,
 * and a load balancer may send the retry elsewhere. It is logged as a warning without a stack:
 * under load an outage refuses thousands of requests a second, all for one reason.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StoreUnavailableError } from '../tokens/index.js';
import { redactUrl } from './auth.js';

/** How a route family words its errors and shapes their bodies. */
export interface ErrorShape {
  /** The message of HTTP 413 (a body over the limit). */
  readonly tooLarge: string;
  /** The message of the other 4xx errors (an unreadable body, a bad content type). */
  readonly invalid: string;
  /** The message of HTTP 500, and of 503 while the server shuts down or its token store is unavailable. */
  readonly unknown: string;
  /** The JSON body of an error with `message`, answered with HTTP `status`. */
  body(message: string, status?: number): Record<string, unknown>;
}

/** Spec 7.2's codes (`{status, message}`): geocoding, timezone, balance, sync, health. */
export const CODE_ERRORS: ErrorShape = {
  tooLarge: 'INVALID_REQUEST',
  invalid: 'INVALID_REQUEST',
  unknown: 'UNKNOWN_ERROR',
  body: (message) => ({ status: 'error', message }),
};

/** The HTTP status of a Fastify error: its own when it is an error status, else 500. */
export function statusOf(error: { statusCode?: unknown }): number {
  return typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500;
}

/** Makes `app`'s routes (a plugin's scope) answer Fastify's errors in `shape`. */
export function useErrorShape(app: FastifyInstance, shape: ErrorShape): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof StoreUnavailableError) {
      replyUnavailable(request, reply, error);
      return reply.send(shape.body(shape.unknown, 503));
    }
    const status = statusOf(error);
    let message: string;
    if (status === 413) message = shape.tooLarge;
    // 503 is the server shutting down: nothing failed, the client retries (elsewhere).
    else if (status === 503) message = shape.unknown;
    else if (status >= 500) {
      request.log.error({ err: error, url: redactUrl(request.url) }, 'unexpected error');
      message = shape.unknown;
    } else message = shape.invalid;
    reply.code(status).send(shape.body(message, status));
  });
}

/** Logs a token store outage for this request and sets HTTP 503 with `Retry-After`; the caller sends the family's body. */
export function replyUnavailable(
  request: FastifyRequest,
  reply: FastifyReply,
  error: StoreUnavailableError,
): void {
  request.log.warn({ reason: error.message, url: redactUrl(request.url) }, 'token store unavailable');
  reply.code(503).header('retry-after', '1');
}
