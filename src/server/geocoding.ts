/**
 * The geocoding route family (spec 4.2 to 4.5): search, reverse, timezone and balance, as one
 * Fastify plugin with spec 7.2's error shape (`{status, message}` codes).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Engine } from '../engine.js';
import { registerBalance } from './balance.js';
import { CODE_ERRORS, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';
import { registerReverse } from './reverse.js';
import { registerSearch } from './search.js';
import { registerTimezone } from './timezone.js';

export function geocodingRoutes(deps: { engine: Engine; tokens: TokenAccess }): FastifyPluginAsync {
  return async (app) => {
    useErrorShape(app, CODE_ERRORS);
    registerBalance(app, deps);
    registerTimezone(app, deps);
    registerReverse(app, deps);
    registerSearch(app, deps);
  };
}
