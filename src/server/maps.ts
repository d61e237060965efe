/**
 * The maps route family (spec 4.6, 4.7, 5, 7.4): styles `GET /v3/<theme>/<type>.json`, vector
 * tiles `GET /v3/<theme>/v/{z}/{x}/{y}.pbf`, raster tiles `GET /v3/<theme>/r/{z}/{x}/{y}.png`
 * (and `@2x.png`), and the glyphs and sprite the styles name,
 * `GET /v3/<theme>/glyphs/{fontstack}/{range}.pbf`, `GET /v3/<theme>/sprite[@2x].{json,png}`.
 *
 * Every request carries the token as the `key` query parameter; the token must be active, have
 * the `maps` service, and accept the caller's referrer and IP. Errors are spec 7.4's JSON
 * `{error}` with their HTTP status. Answers carry an ETag and Cache-Control, and a matching
 * `If-None-Match` gets 304. Metering is configurable ({@link MapMetering}); docs/maps.md.
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Basemap } from '../maps/basemap.js';
import {
  errorImageOf,
  parseStaticMap,
  STATIC_THEME,
  StaticMapError,
  type StaticMapParams,
} from '../maps/staticmap.js';
import {
  FONTSTACK,
  iconColor,
  MAX_TILE_ZOOM,
  rasterStyle,
  renderStyle,
  STYLE_TYPES,
  type StyleType,
  THEMES,
  type Theme,
  tileBases,
  vectorStyle,
} from '../maps/styles.js';
import { native } from '../native/binding.js';
import { StoreUnavailableError } from '../tokens/index.js';
import { authorize, callerOf, tokenPreview } from './auth.js';
import { type ErrorShape, replyUnavailable, useErrorShape } from './error-shape.js';
import type { TokenAccess } from './ledger.js';
import { queryParam } from './query.js';

/**
 * What a map request costs: `none` (nothing is counted), `style` (each style load is one
 * call of the token's geocoding balance; tiles are free), `tile` (each tile, vector or raster,
 * is one call; styles and glyphs are free).
 */
export type MapMetering = 'none' | 'style' | 'tile';
export const MAP_METERINGS: readonly MapMetering[] = ['none', 'style', 'tile'];

/** Options of the maps routes. */
export interface MapsOptions {
  basemap: Basemap;
  /** Base address of styles and glyphs as clients reach it; default: from each request's Host. */
  publicUrl?: string;
  /** Base address of tiles, `{s}` standing for a subdomain; default: {@link publicUrl}. */
  tileUrl?: string;
  /** The values of `{s}`; default `a`, `b`, `c`. */
  subdomains?: string[];
  /** The address named in the 401 and 403 messages. */
  supportEmail?: string;
  /** Default `none`. */
  metering?: MapMetering;
}

/** ETags of the bodies answered, by buffer: a cached tile is hashed once, not on every hit. */
const etags = new WeakMap<Buffer, string>();

/** The ETag of a body: a hash of its bytes. */
function etagOf(body: Buffer | string): string {
  if (typeof body === 'string') return `"${createHash('sha1').update(body).digest('base64url')}"`;
  let etag = etags.get(body);
  if (etag === undefined) {
    etag = `"${createHash('sha1').update(body).digest('base64url')}"`;
    etags.set(body, etag);
  }
  return etag;
}

/** Default address named in error messages; operators set their own (`--support-email`). */
export const DEFAULT_SUPPORT_EMAIL = 'support@example.com';

/** Spec 7.4's messages. */
export function mapMessages(supportEmail: string) {
  return {
    invalidRequest: 'Invalid Request',
    invalidKey: 'Invalid key',
    inactiveKey: `Key not active - Please write to ${supportEmail}`,
    serviceNotEnabled: `Service not enabled - Please write to ${supportEmail} to enable it`,
    accessRestricted: 'Access restricted',
    notFound: 'Imagery not found',
    unknown: 'Unknown error - Please try again after some time',
  } as const;
}

/** Spec 7.4's shape for the errors Fastify raises itself. */
export const MAP_ERRORS: ErrorShape = {
  tooLarge: 'Invalid Request',
  invalid: 'Invalid Request',
  unknown: 'Unknown error - Please try again after some time',
  body: (message) => ({ error: message }),
};

/** How long clients may keep what they got, in seconds. */
const STYLE_MAX_AGE = 300;
const TILE_MAX_AGE = 86_400;

class MapError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const INTEGER = /^(0|[1-9]\d{0,7})$/;
/** `sprite` and `sprite@2x`, the names MapLibre asks for after a style's `sprite` URL. */
const SPRITE = /^sprite(@2x)?$/;

/** The maps route family as a Fastify plugin. */
export function mapsRoutes(deps: { tokens: TokenAccess; maps?: MapsOptions }): FastifyPluginAsync {
  return async (outer) => {
    if (deps.maps) outer.register(mapRoutes(deps.tokens, deps.maps), { prefix: '/v3' });
    else outer.register(noMaps, { prefix: '/v3' });
  };
}

/** A server without a basemap (`serve --no-maps`): every `/v3` path is `Imagery not found`. */
const noMaps: FastifyPluginAsync = async (app) => {
  useErrorShape(app, MAP_ERRORS);
  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send({ error: 'Imagery not found' });
  });
};

/** The routes under `/v3`, where any other path is `Imagery not found` too. */
function mapRoutes(tokens: TokenAccess, maps: MapsOptions): FastifyPluginAsync {
  const deps = { tokens };
  return async (app) => {
    useErrorShape(app, MAP_ERRORS);
    const { basemap } = maps;
    const messages = mapMessages(maps.supportEmail ?? DEFAULT_SUPPORT_EMAIL);
    const metering = maps.metering ?? 'none';
    app.setNotFoundHandler((_request, reply) => {
      reply.code(404).send({ error: messages.notFound });
    });
    for (const theme of THEMES) basemap.setStyle(theme, renderStyle(theme, basemap), iconColor(theme));

    /** Key, token, service and restrictions; charges when this kind of request is metered. */
    async function admit(
      request: FastifyRequest,
      charged: boolean,
      service: 'maps' | 'static' = 'maps',
    ): Promise<string> {
      const key = queryParam(request, 'key');
      if (key === undefined) throw new MapError(400, messages.invalidRequest);
      const access = authorize(deps.tokens, key, callerOf(request));
      if (!access.ok) {
        request.log.info({ token: tokenPreview(key), reason: access.reason }, 'refused');
        if (access.reason === 'INVALID_TOKEN') throw new MapError(401, messages.invalidKey);
        if (access.reason === 'INACTIVE_TOKEN') throw new MapError(401, messages.inactiveKey);
        throw new MapError(403, messages.accessRestricted);
      }
      if (!access.record.services.includes(service)) throw new MapError(403, messages.serviceNotEnabled);
      if (charged) {
        const outcome = await deps.tokens.charge(key, 'geocoding');
        if (!outcome.ok) {
          request.log.info({ token: tokenPreview(key), reason: outcome.reason }, 'not charged');
          throw new MapError(403, messages.accessRestricted);
        }
      }
      return key;
    }

    function themeOf(value: string): Theme {
      if (!(THEMES as readonly string[]).includes(value)) throw new MapError(404, messages.notFound);
      return value as Theme;
    }

    /** z/x/y from the path: 400 when not integers, 404 outside the zoom range or the level. */
    function tileOf(p: { z: string; x: string; y: string }, maxzoom: number): [number, number, number] {
      if (!INTEGER.test(p.z) || !INTEGER.test(p.x) || !INTEGER.test(p.y)) {
        throw new MapError(400, messages.invalidRequest);
      }
      const [z, x, y] = [Number(p.z), Number(p.x), Number(p.y)];
      if (z < basemap.minzoom || z > maxzoom || x >= 2 ** z || y >= 2 ** z) {
        throw new MapError(404, messages.notFound);
      }
      return [z, x, y];
    }

    /** Base addresses of styles and tiles: the configured ones, else this request's own. */
    function bases(request: FastifyRequest): { base: string; tiles: string[] } {
      const own = `${request.protocol}://${request.host}`;
      const base = (maps.publicUrl ?? own).replace(/\/+$/, '');
      const tiles = tileBases(maps.tileUrl ?? base, maps.subdomains ?? ['a', 'b', 'c']);
      return { base, tiles };
    }

    async function answer(
      request: FastifyRequest,
      reply: FastifyReply,
      work: () => Promise<{ body: Buffer | string; type: string; maxAge: number; gzip?: boolean }>,
    ): Promise<unknown> {
      try {
        const out = await work();
        const etag = etagOf(out.body);
        // The key is in every URL; shared caches would serve one caller's answer to others
        // without the referrer and IP checks, so only the caller's own cache may keep it.
        reply.header('cache-control', `private, max-age=${out.maxAge}`);
        reply.header('etag', etag);
        reply.header('vary', 'accept-encoding');
        if (request.headers['if-none-match'] === etag) return reply.code(304).send();
        reply.type(out.type);
        if (out.gzip && out.body.length > 0) {
          if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
            reply.header('content-encoding', 'gzip');
            return reply.send(out.body);
          }
          return reply.send(gunzipSync(out.body));
        }
        return reply.send(out.body);
      } catch (err) {
        if (err instanceof MapError) return reply.code(err.status).send({ error: err.message });
        if (err instanceof StoreUnavailableError) {
          replyUnavailable(request, reply, err);
          return reply.send({ error: messages.unknown });
        }
        request.log.error({ err }, 'map request failed');
        return reply.code(500).send({ error: messages.unknown });
      }
    }

    // Static maps (spec 4.8, 7.3): authentication errors are JSON; every other error is a
    // blank grey image of the requested size and format with the 7.4 status. One image is one
    // call of the geocoding balance under any metering but `none`.
    app.get('/staticmap', async (request, reply) => {
      const params = (request.query ?? {}) as StaticMapParams;
      const blank = (status: number) => {
        const { width, height, format } = errorImageOf(params);
        reply.header('cache-control', 'no-store');
        return reply
          .code(status)
          .type(format === 'png' ? 'image/png' : 'image/jpeg')
          .send(native().blankImage(width, height, format));
      };
      let key: string;
      try {
        key = await admit(request, false, 'static');
      } catch (err) {
        if (err instanceof MapError) return reply.code(err.status).send({ error: err.message });
        if (err instanceof StoreUnavailableError) {
          replyUnavailable(request, reply, err);
          return reply.send({ error: messages.unknown });
        }
        request.log.error({ err }, 'static map admission failed');
        return reply.code(500).send({ error: messages.unknown });
      }
      let spec: ReturnType<typeof parseStaticMap>;
      try {
        spec = parseStaticMap(params);
      } catch (err) {
        if (err instanceof StaticMapError) {
          request.log.info({ reason: err.message }, 'invalid static map');
          return blank(400);
        }
        request.log.error({ err }, 'static map parsing failed');
        return blank(500);
      }
      // One call of the geocoding balance per image, whatever --map-metering says of tiles and
      // styles: an image is a product of its own (issue of the static maps; docs/maps.md).
      {
        const outcome = await deps.tokens.charge(key, 'geocoding');
        if (!outcome.ok) {
          request.log.info({ token: tokenPreview(key), reason: outcome.reason }, 'not charged');
          return reply.code(403).send({ error: messages.accessRestricted });
        }
      }
      try {
        const body = await basemap.staticMap(STATIC_THEME, spec);
        reply.header('cache-control', `private, max-age=${TILE_MAX_AGE}`);
        return reply.type(spec.format === 'png' ? 'image/png' : 'image/jpeg').send(body);
      } catch (err) {
        request.log.error({ err }, 'static map failed');
        return blank(500);
      }
    });

    app.get<{ Params: { theme: string; type: string } }>('/:theme/:type.json', (request, reply) =>
      answer(request, reply, async () => {
        const sprite = SPRITE.exec(request.params.type);
        if (sprite) {
          await admit(request, false);
          const sheet = basemap.sprite(themeOf(request.params.theme), sprite[1] ? 2 : 1);
          if (!sheet) throw new MapError(404, messages.notFound);
          return { body: sheet.json, type: 'application/json; charset=utf-8', maxAge: TILE_MAX_AGE };
        }
        const key = await admit(request, metering === 'style');
        const theme = themeOf(request.params.theme);
        const type = request.params.type;
        if (!(STYLE_TYPES as readonly string[]).includes(type)) throw new MapError(404, messages.notFound);
        const urls = { ...bases(request), key };
        const make = (type as StyleType) === 'vector' ? vectorStyle : rasterStyle;
        const body = JSON.stringify(make(theme, urls, basemap));
        return { body, type: 'application/json; charset=utf-8', maxAge: STYLE_MAX_AGE };
      }),
    );

    app.get<{ Params: { theme: string; name: string } }>('/:theme/:name.png', (request, reply) =>
      answer(request, reply, async () => {
        await admit(request, false);
        const sprite = SPRITE.exec(request.params.name);
        if (!sprite) throw new MapError(404, messages.notFound);
        const sheet = basemap.sprite(themeOf(request.params.theme), sprite[1] ? 2 : 1);
        if (!sheet) throw new MapError(404, messages.notFound);
        return { body: sheet.png, type: 'image/png', maxAge: TILE_MAX_AGE };
      }),
    );

    app.get<{ Params: { theme: string; z: string; x: string; y: string } }>(
      '/:theme/v/:z/:x/:y.pbf',
      (request, reply) =>
        answer(request, reply, async () => {
          await admit(request, metering === 'tile');
          themeOf(request.params.theme);
          const [z, x, y] = tileOf(request.params, MAX_TILE_ZOOM);
          const body = await basemap.vectorTile(z, x, y);
          if (body === null) throw new MapError(404, messages.notFound);
          return { body, type: 'application/x-protobuf', maxAge: TILE_MAX_AGE, gzip: true };
        }),
    );

    app.get<{ Params: { theme: string; z: string; x: string; y: string } }>(
      '/:theme/r/:z/:x/:y.png',
      (request, reply) =>
        answer(request, reply, async () => {
          await admit(request, metering === 'tile');
          const theme = themeOf(request.params.theme);
          const m = /^(\d+)(@2x)?$/.exec(request.params.y);
          if (!m) throw new MapError(400, messages.invalidRequest);
          const [z, x, y] = tileOf({ ...request.params, y: m[1] as string }, MAX_TILE_ZOOM);
          const png = await basemap.rasterTile(theme, z, x, y, m[2] ? 2 : 1);
          if (png === null) throw new MapError(404, messages.notFound);
          return { body: png, type: 'image/png', maxAge: TILE_MAX_AGE };
        }),
    );

    app.get<{ Params: { theme: string; fontstack: string; range: string } }>(
      '/:theme/glyphs/:fontstack/:range.pbf',
      (request, reply) =>
        answer(request, reply, async () => {
          await admit(request, false);
          themeOf(request.params.theme);
          // A client asks for its whole font list ("A,B"); the basemap has one fontstack.
          const stacks = request.params.fontstack.split(',').map((s) => s.trim());
          const stack = stacks.find((s) => basemap.fontstacks.includes(s)) ?? FONTSTACK;
          if (!/^\d+-\d+$/.test(request.params.range)) throw new MapError(400, messages.invalidRequest);
          const body = basemap.glyphs(stack, request.params.range);
          if (body === null) throw new MapError(404, messages.notFound);
          return { body, type: 'application/x-protobuf', maxAge: TILE_MAX_AGE };
        }),
    );
  };
}
