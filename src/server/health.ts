/**
 * `GET /health`: liveness and what this worker holds (station counts, stored observations, the
 * remote fallback's breaker, regions and cache when one is configured).
 * Not part of the spec; load balancers and operators call it.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Engine } from '../engine.js';
import type { ObservationStore } from '../observations/index.js';
import { CODE_ERRORS, useErrorShape } from './error-shape.js';

/** The health route as a Fastify plugin, with spec 7.2's error shape. */
export function healthRoutes(deps: { engine: Engine; observations: ObservationStore }): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, CODE_ERRORS);
    const started = Date.now();
    app.get('/health', async (_request, reply) => {
      try {
        return {
          status: 'ok',
          pid: process.pid,
          uptime_s: Math.round((Date.now() - started) / 1000),
          db: deps.engine.stats(),
          observations: deps.observations.count(),
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
