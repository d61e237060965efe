/**
 * The HTTP service: a Fastify instance with CORS, body limits, request ids and one structured
 * log line per request, and a plugin per route family (geolocation, geocoding, sync, health, maps),
 * each of which answers its own errors.
 *
 * `buildServer` owns none of its dependencies: whoever opened the engine and the stores closes
 * them after `app.close()` (which finishes requests in flight). See docs/server.md.
 */
import type { Socket } from 'node:net';
import cors from '@fastify/cors';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Engine } from '../engine.js';
import type { LearnBatcher } from '../learning/submissions.js';
import type { ObservationStorage } from '../observations/index.js';
import { SyncHeader } from '../sync/wire.js';
import type { TokenStore } from '../tokens/index.js';
import { plainIp, redactUrl, ServerMessage } from './auth.js';
import { demoRoutes } from './demo.js';
import { CODE_ERRORS, useErrorShape } from './error-shape.js';
import { geocodingRoutes } from './geocoding.js';
import { healthRoutes } from './health.js';
import { ichnaeaRoutes } from './ichnaea.js';
import type { LedgerClient, TokenAccess } from './ledger.js';
import { type MapsOptions, mapsRoutes } from './maps.js';
import { geolocationRoutes } from './process.js';
import { callerAddress, type TrustProxy, trustFunction } from './proxy.js';
import { syncRoutes } from './sync.js';

/** Largest request body accepted by default: room for the 1000 GPS fixes a request may carry. */
export const DEFAULT_BODY_LIMIT = 512 * 1024;

/**
 * Default time for a whole request (headers and body) to arrive. Node checks the deadline every
 * second (a quarter of the deadline when shorter), so a client that trickles its body is cut
 * off within 21 s; a 512 KB body needs 25 KB/s to make it.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 20_000;

/** Default cap on open connections per server process: partial bodies held at once are at most this many times the body limit. */
export const DEFAULT_MAX_CONNECTIONS = 512;

/** How often Node looks for requests past their deadline, at most. */
const CONNECTION_CHECK_MS = 1_000;

/** Headers must arrive within this time (or the request timeout, when shorter). */
const HEADERS_TIMEOUT_MS = 10_000;

/** Options of {@link buildServer}. */
export interface ServerOptions {
  engine: Engine;
  /** A {@link TokenStore}, or under node:cluster a {@link LedgerClient} that charges through the primary. */
  tokens: TokenAccess;
  observations: ObservationStorage;
  /** Feeds GPS submissions into the engine's learned-station overlay (docs/learning.md); absent: stored only. */
  learner?: LearnBatcher;
  /** Fastify's pino logger: `true`, or pino options (level, destination...). Default: off. */
  logger?: boolean | object;
  /** Largest request body in bytes; default {@link DEFAULT_BODY_LIMIT}. Larger gets HTTP 413. */
  bodyLimit?: number;
  /**
   * Which reverse proxies' `X-Forwarded-For` to believe (docs/security.md): a hop count, or
   * addresses and CIDR subnets (`'127.0.0.1,10.0.0.0/8'`, `['loopback']`); `true` means
   * loopback only. The caller is the rightmost address that is not a trusted proxy. Default
   * false: the socket's peer is the caller.
   */
  trustProxy?: TrustProxy;
  /**
   * Longest time in ms a request may take to arrive, headers and body (Node's
   * `requestTimeout`); a slower client gets HTTP 408 and its connection closed. Default
   * {@link DEFAULT_REQUEST_TIMEOUT_MS}.
   */
  requestTimeoutMs?: number;
  /** Most connections a server process holds at once (`server.maxConnections`); more are closed at accept. Default {@link DEFAULT_MAX_CONNECTIONS}. */
  maxConnections?: number;
  /** `/health` with pid, uptime, memory and database counts; default false: `{status}` alone. */
  healthDetail?: boolean;
  /** Milliseconds since the epoch for `GET /v2/sync`'s window; default `Date.now` (tests move it). */
  clock?: () => number;
  /** The basemap and addresses of the `/v3` map routes (docs/maps.md); absent: no map routes. */
  maps?: MapsOptions;
  /** The demo page at `/` and `/demo` (with map routes only); default true. */
  demoPage?: boolean;
}

/**
 * One log line per finished request (not two), with the token in query strings cut to its
 * first characters. Fastify adds the request id (`reqId`).
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = {
      method: request.method,
      url: redactUrl(request.url),
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ip: plainIp(callerAddress(request)),
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }

  override routeNotFound(request: FastifyRequest): void {
    request.log.info({ method: request.method, url: redactUrl(request.url) }, 'route not found');
  }

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    const line = { url: redactUrl(request.url), statusCode: reply.statusCode, err: error };
    if (reply.statusCode >= 500) reply.log.error(line, error.message);
    else reply.log.info(line, error.message);
  }
}

/** pino options with serializers that never print a token. */
function loggerOptions(logger: boolean | object | undefined): boolean | object {
  if (logger === undefined || logger === false) return false;
  const base = logger === true ? {} : logger;
  return {
    ...base,
    serializers: {
      req: (req: { method?: string; url?: string }) => ({
        method: req.method,
        url: redactUrl(req.url ?? ''),
      }),
      ...((base as { serializers?: object }).serializers ?? {}),
    },
  };
}

/** Answers a malformed HTTP request (bad request line, header overflow) with a JSON body. */
function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let reason = 'Bad Request';
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    reason = 'Request Timeout';
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    reason = 'Request Header Fields Too Large';
  }
  const body = JSON.stringify({ status: 'error', message: 'Invalid request' });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

let requestCounter = 0;

/**
 * A caller's own request id is echoed and logged only when it is 1 to 40 characters of
 * `A-Z a-z 0-9 . _ -`: room for a UUID, no room for log injection, huge headers or a pasted
 * access token (43 characters). Anything else gets an id of ours.
 */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,40}$/;

function callerRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined;
}

/** Builds the service. Call `listen()` on the result; `close()` finishes requests in flight. */
export function buildServer(options: ServerOptions): FastifyInstance {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const prefix = process.pid.toString(36);
  const trust = trustFunction(options.trustProxy ?? false);
  const app = Fastify({
    logger: loggerOptions(options.logger),
    logController: new RequestLog(),
    bodyLimit,
    ...(trust === false ? {} : { trustProxy: trust }),
    // Fastify's default of 0 turns Node's request deadline off: a client trickling a body would
    // hold its socket and partial body for as long as it likes.
    requestTimeout,
    http: {
      requestTimeout,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeout),
      connectionsCheckingInterval: Math.min(CONNECTION_CHECK_MS, Math.max(50, requestTimeout / 4)),
    },
    // The caller's X-Request-Id is read by genReqId, which takes only a short plain one.
    requestIdHeader: false,
    genReqId: (req) =>
      callerRequestId(req.headers['x-request-id']) ?? `${prefix}-${(++requestCounter).toString(36)}`,
    clientErrorHandler,
    // A URL that cannot be decoded (`/%zz`) matches no route: answered in the JSON of spec 7.2.
    frameworkErrors: (error, _request, reply) => {
      const status = typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 400;
      (reply as FastifyReply)
        .code(status)
        .send(CODE_ERRORS.body(status >= 500 ? CODE_ERRORS.unknown : CODE_ERRORS.invalid));
    },
    // Keep-alive sockets idle at shutdown are closed at once; busy ones finish their request.
    forceCloseConnections: 'idle',
    // Requests arriving on a busy connection during shutdown get HTTP 503 from the hook below,
    // in the words and shape of their route's errors (Fastify's own 503 has no `status`).
    return503OnClosing: false,
  }) as unknown as FastifyInstance;
  app.server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;

  // Every body is read as text, whatever its content type (or none): the spec's body rules are
  // decided by parseRequestText, and PHP clients post JSON as form data.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_request, body, done) => {
    done(null, body);
  });

  app.register(cors, {
    origin: '*',
    methods: ['GET', 'POST', 'OPTIONS'],
    exposedHeaders: ['x-request-id', 'retry-after', ...Object.values(SyncHeader)],
    maxAge: 86_400,
    // An OPTIONS without Origin gets the same 204 instead of a plain-text 400: always JSON or empty.
    strictPreflight: false,
  });

  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      done(Object.assign(new Error('shutting down'), { statusCode: 503 }));
      return;
    }
    done();
  });

  // Each route family's plugin answers its own errors; this is for what belongs to none.
  useErrorShape(app, CODE_ERRORS);

  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send({ status: 'error', message: ServerMessage.notFound });
  });

  app.register(geolocationRoutes(options));
  app.register(geocodingRoutes(options));
  app.register(ichnaeaRoutes(options));
  app.register(syncRoutes(options));
  app.register(healthRoutes(options));
  app.register(mapsRoutes(options));
  if (options.maps && options.demoPage !== false) app.register(demoRoutes);
  return app;
}
