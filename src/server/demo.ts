/**
 * The demo page at `/` and `/demo` (web/): a MapLibre GL JS map of this server's styles with
 * `/v2/process`, reverse geocoding, timezone, search and the static map URL of the view. MapLibre
 * comes from the `maplibre-gl` package and is served here, so the page loads nothing from
 * elsewhere. The page reads its key from `?key=` or a text box; the routes it calls check it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { packageRoot } from '../data-files.js';

/** The page's files: path, media type and where they come from. */
function assets(): Map<string, { type: string; body: Buffer }> {
  const require = createRequire(import.meta.url);
  const maplibre = dirname(require.resolve('maplibre-gl/dist/maplibre-gl.js'));
  const web = join(packageRoot, 'web');
  const html = readFileSync(join(web, 'index.html'));
  return new Map([
    ['/', { type: 'text/html; charset=utf-8', body: html }],
    ['/demo', { type: 'text/html; charset=utf-8', body: html }],
    ['/demo/', { type: 'text/html; charset=utf-8', body: html }],
    ['/demo/demo.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(join(web, 'demo.js')) }],
    ['/demo/demo.css', { type: 'text/css; charset=utf-8', body: readFileSync(join(web, 'demo.css')) }],
    [
      '/demo/maplibre-gl.js',
      { type: 'text/javascript; charset=utf-8', body: readFileSync(join(maplibre, 'maplibre-gl.js')) },
    ],
    [
      '/demo/maplibre-gl.css',
      { type: 'text/css; charset=utf-8', body: readFileSync(join(maplibre, 'maplibre-gl.css')) },
    ],
  ]);
}

/** The demo page's routes. */
export const demoRoutes: FastifyPluginAsync = async (app) => {
  const files = assets();
  for (const [path, file] of files) {
    app.get(path, (_request, reply) => {
      reply.header('cache-control', 'no-cache');
      reply.header('x-content-type-options', 'nosniff');
      return reply.type(file.type).send(file.body);
    });
  }
};
