/**
 * `GET /health`: liveness for load balancers and operators. Not part of the spec.
 *
 * Anyone can call it, so by default it says only `{status}`: whether the engine answers. With
 * `healthDetail` it also shows what this worker holds (pid, uptime, memory, station counts,
 * stored observations, the remote fallback's breaker, regions and cache), which helps an
 * operator and would help an attacker size the service.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Engine } from '../engine.js';
import type { ObservationStorage } from '../observations/index.js';
import { CODE_ERRORS, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';

/** The health route as a Fastify plugin, with spec 7.2's error shape. */
export function healthRoutes(deps: {
  engine: Engine;
  observations: ObservationStorage;
  /** A token store that can be down (PostgreSQL) is asked too: no tokens, no service. */
  tokens?: Pick<TokenAccess, 'ping'>;
  healthDetail?: boolean;
}): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, CODE_ERRORS);
    const started = Date.now();
    app.get('/health', async (_request, reply) => {
      try {
        await deps.tokens?.ping?.();
      } catch (err) {
        reply.log.error({ err }, 'health check: the token store does not answer');
        reply.code(503);
        return { status: 'error', message: 'UNKNOWN_ERROR' };
      }
      try {
        const db = deps.engine.stats();
        if (deps.healthDetail !== true) return { status: 'ok' };
        return {
          status: 'ok',
          pid: process.pid,
          uptime_s: Math.round((Date.now() - started) / 1000),
          db,
          observations: await deps.observations.count(),
          rss_bytes: process.memoryUsage.rss(),
          // Per worker: each has its own breaker and cache.
          remote: deps.engine.remoteStatus(),
        };
      } catch (err) {
        reply.log.error({ err }, 'health check failed');
        reply.code(503);
        return { status: 'error', message: 'UNKNOWN_ERROR' };
      }
    });
  };
}
