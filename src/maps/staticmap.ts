/**
 * Static maps (spec 4.8): the query parameters parsed and checked, markers and paths read,
 * encoded polylines decoded, and the view fitted to the overlays when no centre or zoom is
 * given; the image is drawn by the native core ({@link Basemap.staticMap}). See docs/maps.md.
 */

import { Basemap } from './basemap.js';
import { iconColor, renderStyle } from './styles.js';

/** Spec 4.8's limits and defaults. */
export const MAX_STATIC_SIZE = 1280;
export const DEFAULT_STATIC_SIZE = 300;
export const MAX_STATIC_ZOOM = 18;
const DEFAULT_ZOOM = 18;

/** The attribution drawn in the corner of every image. */
export const STATIC_ATTRIBUTION = '© GeoNames, Natural Earth';

/** The query of a static map request; repeatable parameters as arrays. */
export interface StaticMapParams {
  center?: string;
  zoom?: string | number;
  size?: string;
  scale?: string | number;
  format?: string;
  maptype?: string;
  markers?: string | string[];
  path?: string | string[];
}

export type Rgba = [number, number, number, number];
export type StaticFormat = 'png' | 'jpeg';
export type MarkerSize = 'tiny' | 'small' | 'large';

export interface StaticMarker {
  size: MarkerSize;
  color: Rgba;
  cutout: boolean;
  /** `[lat, lon]`. */
  at: [number, number];
}

export interface StaticPath {
  weight: number;
  color: Rgba;
  fill: Rgba | null;
  points: [number, number][];
}

/** A static map request, parsed: what the core draws. */
export interface StaticMapSpec {
  lat: number;
  lon: number;
  zoom: number;
  width: number;
  height: number;
  scale: number;
  format: StaticFormat;
  paths: StaticPath[];
  markers: StaticMarker[];
  attribution: string;
}

/** A request that cannot be drawn: `Invalid Request` (400). */
export class StaticMapError extends Error {
  readonly status = 400;
}

/** Marker and path colour names. */
const NAMED: Record<string, Rgba> = {
  red: [0xea, 0x43, 0x35, 255],
  blue: [0x42, 0x85, 0xf4, 255],
  gray: [0x9e, 0x9e, 0x9e, 255],
  yellow: [0xfb, 0xbc, 0x05, 255],
  purple: [0x9c, 0x27, 0xb0, 255],
  orange: [0xff, 0x98, 0x00, 255],
  green: [0x34, 0xa8, 0x53, 255],
  black: [0x21, 0x21, 0x21, 255],
  brown: [0x79, 0x55, 0x48, 255],
  white: [0xff, 0xff, 0xff, 255],
};
const ICON_COLORS = ['red', 'blue', 'gray', 'yellow', 'purple', 'orange', 'green', 'black'];
const SIZES: readonly MarkerSize[] = ['tiny', 'small', 'large'];
/** Default path style: 5 px, blue at 75 % opacity. */
const PATH_COLOR: Rgba = [0, 0, 255, 0xbf];

function fail(what: string): never {
  throw new StaticMapError(`Invalid Request: ${what}`);
}

/**
 * A colour: a name, `rgba(r,g,b,a)` (a from 0 to 1), `0xRRGGBB`, `0xRRGGBBAA`, `#RRGGBB` or
 * `#RRGGBBAA`; null when it is none of these.
 */
export function parseColor(text: string): Rgba | null {
  const s = text.trim().toLowerCase();
  const named = NAMED[s];
  if (named) return [...named];
  const hex = /^(?:0x|#)([0-9a-f]{6})([0-9a-f]{2})?$/.exec(s);
  if (hex) {
    const v = hex[1] as string;
    const a = hex[2] === undefined ? 255 : Number.parseInt(hex[2], 16);
    return [
      Number.parseInt(v.slice(0, 2), 16),
      Number.parseInt(v.slice(2, 4), 16),
      Number.parseInt(v.slice(4, 6), 16),
      a,
    ];
  }
  const fn = /^rgba?\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*(?:,\s*([\d.]+)\s*)?\)$/.exec(s);
  if (fn) {
    const [r, g, b] = [Number(fn[1]), Number(fn[2]), Number(fn[3])];
    const a = fn[4] === undefined ? 1 : Number(fn[4]);
    if (r > 255 || g > 255 || b > 255 || !(a >= 0 && a <= 1)) return null;
    return [r, g, b, Math.round(a * 255)];
  }
  return null;
}

/** Decodes an encoded polyline (Google's format, precision 5) into `[lat, lon]` pairs. */
export function decodePolyline(encoded: string): [number, number][] {
  const out: [number, number][] = [];
  let i = 0;
  let lat = 0;
  let lon = 0;
  const next = (): number => {
    let shift = 0;
    let result = 0;
    for (;;) {
      if (i >= encoded.length) fail('truncated polyline');
      const b = encoded.charCodeAt(i++) - 63;
      if (b < 0 || b > 63) fail('not an encoded polyline');
      result += (b & 0x1f) * 2 ** shift;
      shift += 5;
      if (b < 0x20) break;
      if (shift > 35) fail('not an encoded polyline');
    }
    return result % 2 === 1 ? -(result + 1) / 2 : result / 2;
  };
  while (i < encoded.length) {
    lat += next();
    lon += next();
    out.push([lat / 1e5, lon / 1e5]);
  }
  return out;
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/** `lat,lon` with both in range. */
export function parseLatLon(text: string): [number, number] {
  const parts = text.split(',');
  if (parts.length !== 2) fail(`not a location: ${text}`);
  const [a, b] = parts.map((p) => p.trim()) as [string, string];
  if (!NUMBER.test(a) || !NUMBER.test(b)) fail(`not a location: ${text}`);
  const lat = Number(a);
  const lon = Number(b);
  if (lat < -90 || lat > 90 || lon < -180 || lon > 180) fail(`out of range: ${text}`);
  return [lat, lon];
}

function all(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((s) => s !== '');
}

/** One `markers` value: its style and locations; `drawn` false for an invalid icon name. */
export function parseMarkers(value: string): { markers: StaticMarker[]; drawn: boolean } {
  let size: MarkerSize = 'small';
  let color: Rgba = [...(NAMED.red as Rgba)];
  let cutout = true;
  let drawn = true;
  const at: [number, number][] = [];
  for (const raw of value.split('|')) {
    const part = raw.trim();
    if (part === '') continue;
    const m = /^(icon|size|color):(.*)$/i.exec(part);
    if (m) {
      const key = (m[1] as string).toLowerCase();
      const v = (m[2] as string).trim().toLowerCase();
      if (key === 'icon') {
        const icon = /^(large|small|tiny)-([a-z]+)-(cutout|blank)$/.exec(v);
        if (!icon || !ICON_COLORS.includes(icon[2] as string)) drawn = false;
        else {
          size = icon[1] as MarkerSize;
          color = [...(NAMED[icon[2] as string] as Rgba)];
          cutout = icon[3] === 'cutout';
        }
      } else if (key === 'size') {
        if (!(SIZES as readonly string[]).includes(v)) fail(`marker size ${v}`);
        size = v as MarkerSize;
      } else {
        const c = parseColor(v);
        if (!c) fail(`marker color ${v}`);
        color = c;
      }
      continue;
    }
    at.push(parseLatLon(part));
  }
  if (at.length === 0) fail('a markers value without locations');
  return { markers: at.map((p) => ({ size, color, cutout, at: p })), drawn };
}

/** One `path` value. */
export function parsePath(value: string): StaticPath {
  let weight = 5;
  let color: Rgba = [...PATH_COLOR];
  let fill: Rgba | null = null;
  const points: [number, number][] = [];
  // An encoded polyline may hold `|` itself: it runs to the end of the value.
  const enc = value.startsWith('enc:') ? 0 : value.indexOf('|enc:') + 1;
  const head = enc > 0 || value.startsWith('enc:') ? value.slice(0, enc) : value;
  const encoded = enc > 0 || value.startsWith('enc:') ? value.slice(enc + 4) : undefined;
  for (const raw of head.split('|')) {
    const part = raw.trim();
    if (part === '') continue;
    const m = /^(weight|color|fillcolor):(.*)$/i.exec(part);
    if (m) {
      const key = (m[1] as string).toLowerCase();
      const v = (m[2] as string).trim();
      if (key === 'weight') {
        if (!/^\d{1,3}(\.\d+)?$/.test(v) || Number(v) > 100) fail(`path weight ${v}`);
        weight = Number(v);
      } else {
        const c = parseColor(v);
        if (!c) fail(`path ${key} ${v}`);
        if (key === 'color') color = c;
        else fill = c;
      }
      continue;
    }
    points.push(parseLatLon(part));
  }
  if (encoded !== undefined) points.push(...decodePolyline(encoded));
  for (const [lat, lon] of points) {
    if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180)) fail('path point out of range');
  }
  if (points.length < 2) fail('a path needs two points or more');
  return { weight, color, fill, points };
}

/** Web Mercator position as fractions of the world (0 to 1). */
function mercator(lat: number, lon: number): [number, number] {
  const s = Math.sin((Math.max(-85.05112878, Math.min(85.05112878, lat)) * Math.PI) / 180);
  return [(lon + 180) / 360, 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)];
}

/**
 * The centre and zoom that show every point inside a `width` x `height` image with a margin
 * (pins stand above their point, so the top margin is larger); `center` and `zoom` when given
 * are kept. Longitudes are taken on the shortest span, so points on both sides of the
 * antimeridian are fitted across it.
 */
export function fitView(
  points: [number, number][],
  width: number,
  height: number,
  center?: [number, number],
  zoom?: number,
): { lat: number; lon: number; zoom: number } {
  // The smallest longitude interval holding every point: the complement of the largest gap.
  const lons = points.map((p) => p[1]).sort((a, b) => a - b);
  let west = lons[0] as number;
  let east = lons[lons.length - 1] as number;
  let gap = 360 - (east - west);
  for (let k = 1; k < lons.length; k++) {
    const g = (lons[k] as number) - (lons[k - 1] as number);
    if (g > gap) {
      gap = g;
      west = lons[k] as number;
      east = (lons[k - 1] as number) + 360;
    }
  }
  const ys = points.map((p) => mercator(p[0], 0)[1]);
  const north = Math.min(...ys);
  const south = Math.max(...ys);
  let lat: number;
  let lon: number;
  if (center) [lat, lon] = center;
  else {
    const y = (north + south) / 2;
    lat = (Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180) / Math.PI;
    lon = (west + east) / 2;
    lon = ((((lon + 180) % 360) + 360) % 360) - 180;
  }
  if (zoom !== undefined) return { lat, lon, zoom };
  const mx = Math.min(24, width / 4);
  const top = Math.min(40, height / 4);
  const bottom = Math.min(12, height / 4);
  // Around a given centre the view must reach the farther side on each axis.
  const [cx, cy] = mercator(lat, lon);
  const unwrap = (l: number) => l + Math.round((lon - l) / 360) * 360;
  const dx = center
    ? 2 * Math.max(...lons.map((l) => Math.abs(mercator(0, unwrap(l))[0] - cx)))
    : (east - west) / 360;
  const dy = center ? 2 * Math.max(cy - north, south - cy) : south - north;
  const fits = (z: number) => {
    const world = 256 * 2 ** z;
    return dx * world <= width - 2 * mx && dy * world <= height - top - bottom;
  };
  let z = MAX_STATIC_ZOOM;
  while (z > 0 && !fits(z)) z--;
  return { lat, lon, zoom: z };
}

/** Size, scale and format of a request as far as they are valid: the size of an error image. */
export function errorImageOf(params: StaticMapParams): {
  width: number;
  height: number;
  format: StaticFormat;
} {
  let [w, h] = [DEFAULT_STATIC_SIZE, DEFAULT_STATIC_SIZE];
  try {
    [w, h] = parseSize(params.size);
  } catch {
    // the default size
  }
  const scale = String(params.scale ?? '1') === '2' ? 2 : 1;
  const f = String(params.format ?? 'png').toLowerCase();
  return { width: w * scale, height: h * scale, format: f === 'jpg' || f === 'jpeg' ? 'jpeg' : 'png' };
}

function parseSize(size: string | undefined): [number, number] {
  if (size === undefined || size === '') return [DEFAULT_STATIC_SIZE, DEFAULT_STATIC_SIZE];
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  if (!m) fail(`size ${size}`);
  const [w, h] = [Number(m[1]), Number(m[2])];
  if (w < 1 || h < 1 || w > MAX_STATIC_SIZE || h > MAX_STATIC_SIZE) fail(`size ${size}`);
  return [w, h];
}

function one(v: string | number | string[] | undefined): string | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined || first === '' ? undefined : String(first);
}

/** Parses and checks a static map request; throws {@link StaticMapError}. */
export function parseStaticMap(params: StaticMapParams): StaticMapSpec {
  const [width, height] = parseSize(one(params.size));
  const scaleText = one(params.scale) ?? '1';
  if (scaleText !== '1' && scaleText !== '2') fail(`scale ${scaleText}`);
  const formatText = (one(params.format) ?? 'png').toLowerCase();
  if (!['png', 'jpg', 'jpeg'].includes(formatText)) fail(`format ${formatText}`);
  const maptype = one(params.maptype);
  if (maptype !== undefined && maptype.toLowerCase() !== 'roadmap') fail(`maptype ${maptype}`);
  const centerText = one(params.center);
  const center = centerText === undefined ? undefined : parseLatLon(centerText);
  const zoomText = one(params.zoom);
  let zoom: number | undefined;
  if (zoomText !== undefined) {
    if (!/^\d{1,2}$/.test(zoomText) || Number(zoomText) > MAX_STATIC_ZOOM) fail(`zoom ${zoomText}`);
    zoom = Number(zoomText);
  }
  const markerValues = all(params.markers);
  const markers: StaticMarker[] = [];
  const located: [number, number][] = [];
  for (const value of markerValues) {
    const parsed = parseMarkers(value);
    for (const m of parsed.markers) located.push(m.at);
    if (parsed.drawn) markers.push(...parsed.markers);
  }
  const paths = all(params.path).map(parsePath);
  for (const p of paths) located.push(...p.points);
  if (center === undefined && markerValues.length === 0) fail('center (or markers) missing');
  const view =
    located.length === 0
      ? {
          lat: (center as [number, number])[0],
          lon: (center as [number, number])[1],
          zoom: zoom ?? DEFAULT_ZOOM,
        }
      : fitView(located, width, height, center, zoom);
  return {
    ...view,
    width,
    height,
    scale: Number(scaleText),
    format: formatText === 'png' ? 'png' : 'jpeg',
    paths,
    markers,
    attribution: STATIC_ATTRIBUTION,
  };
}

/** The theme static maps are drawn in (`maptype=roadmap`). */
export const STATIC_THEME = 'streets';

/** Registers the static map theme's render style on `basemap` unless it has it. */
export function prepareStaticStyle(basemap: Basemap): void {
  if (!basemap.hasStyle(STATIC_THEME)) {
    basemap.setStyle(STATIC_THEME, renderStyle(STATIC_THEME, basemap), iconColor(STATIC_THEME));
  }
}

let defaultBasemap: Basemap | undefined;

/**
 * A static map image from spec 4.8's query parameters (`key` aside), drawn from `basemap`
 * (default: the embedded world basemap): the encoded PNG or JPEG bytes and their media type.
 * Throws {@link StaticMapError} for an invalid request.
 */
export async function renderStaticMap(
  params: StaticMapParams,
  options: { basemap?: Basemap } = {},
): Promise<{ body: Buffer; type: 'image/png' | 'image/jpeg'; spec: StaticMapSpec }> {
  const spec = parseStaticMap(params);
  if (!options.basemap && !defaultBasemap) defaultBasemap = Basemap.open();
  const basemap = options.basemap ?? (defaultBasemap as Basemap);
  prepareStaticStyle(basemap);
  const body = await basemap.staticMap(STATIC_THEME, spec);
  return { body, type: spec.format === 'png' ? 'image/png' : 'image/jpeg', spec };
}
