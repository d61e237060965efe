/**
 * The map styles of `/v3/<theme>/<type>.json` (spec 4.6): MapLibre style specification v8
 * documents for the themes `streets`, `dark` and `light` over the basemap's OpenMapTiles
 * layers. The `vector` style is drawn by the browser from this server's vector tiles; the
 * `raster` style shows this server's PNG tiles, which the core renders from the same vector
 * tiles with the same `vector` style. Every URL in a style carries the caller's key.
 */

/** The themes served. */
export const THEMES = ['streets', 'dark', 'light'] as const;
export type Theme = (typeof THEMES)[number];

/** The style types served (spec 4.6). */
export const STYLE_TYPES = ['vector', 'raster'] as const;
export type StyleType = (typeof STYLE_TYPES)[number];

/** The deepest zoom of vector and raster tiles (past the basemap's own deepest zoom its data is magnified). */
export const MAX_TILE_ZOOM = 18;

/** The fontstack of every label; its glyphs ship in the basemap's `glyphs` table. */
export const FONTSTACK = 'Noto Sans Regular';

/** The colours of a theme. */
interface Palette {
  land: string;
  water: string;
  river: string;
  border: string;
  country: string;
  city: string;
  town: string;
  halo: string;
  /** Parks, grass and wood of a street-level tileset. */
  green: string;
  building: string;
  road: string;
  majorRoad: string;
}

const PALETTES: Record<Theme, Palette> = {
  streets: {
    land: '#f2efe9',
    water: '#aad3df',
    river: '#8fc1d4',
    border: '#9e86a8',
    country: '#4a4a4a',
    city: '#333333',
    town: '#555555',
    halo: '#ffffff',
    green: '#cde6c0',
    building: '#d9d0c9',
    road: '#ffffff',
    majorRoad: '#f7c873',
  },
  light: {
    land: '#fafaf8',
    water: '#d5dde2',
    river: '#c2ced6',
    border: '#b8b8c0',
    country: '#707070',
    city: '#5a5a5a',
    town: '#7a7a7a',
    halo: '#ffffff',
    green: '#e6eee2',
    building: '#e8e6e3',
    road: '#ffffff',
    majorRoad: '#e9e2d0',
  },
  dark: {
    land: '#23272e',
    water: '#0f1a29',
    river: '#1c2c40',
    border: '#6a6f7d',
    country: '#b8bcc4',
    city: '#d6d8dc',
    town: '#a4a8b0',
    halo: '#111418',
    green: '#243027',
    building: '#30353d',
    road: '#3a404a',
    majorRoad: '#5a5446',
  },
};

/** Where a style's URLs point. */
export interface StyleUrls {
  /** Base address of styles and glyphs, without a trailing slash (`https://maps.example.com`). */
  base: string;
  /** Base addresses of tiles, one per subdomain (`https://a.tiles.example.com`, ...). */
  tiles: string[];
  /** The caller's key, written into every URL. */
  key: string;
}

/** The `?key=` suffix of every URL. */
function keyQuery(key: string): string {
  return `?key=${encodeURIComponent(key)}`;
}

/**
 * Tile base addresses from a `--tile-url` template: `{s}` in it is replaced by each subdomain.
 * Without `{s}`, the template is the one address.
 */
export function tileBases(template: string, subdomains: readonly string[]): string[] {
  const t = template.replace(/\/+$/, '');
  return t.includes('{s}') ? subdomains.map((s) => t.replaceAll('{s}', s)) : [t];
}

/** The colour of a theme's icons (Maki, rasterized into its sprite). */
export function iconColor(theme: Theme): string {
  return PALETTES[theme].city;
}

/**
 * The layers of a theme: land cover, parks, buildings and roads where the tileset has them,
 * water, rivers, borders, place labels (capitals with a star icon).
 */
function layers(theme: Theme): object[] {
  const p = PALETTES[theme];
  const text = (size: unknown, color: string) => ({
    layout: {
      'text-field': ['get', 'name'],
      'text-font': [FONTSTACK],
      'text-size': size,
      'text-max-width': 8,
      'symbol-sort-key': ['get', 'rank'],
    },
    paint: { 'text-color': color, 'text-halo-color': p.halo, 'text-halo-width': 1.5 },
  });
  const capital = text(['interpolate', ['linear'], ['zoom'], 2, 11, 10, 16], p.city);
  return [
    { id: 'background', type: 'background', paint: { 'background-color': p.land } },
    {
      id: 'landcover-green',
      type: 'fill',
      source: 'basemap',
      'source-layer': 'landcover',
      filter: ['match', ['get', 'class'], ['grass', 'wood', 'farmland'], true, false],
      paint: { 'fill-color': p.green },
    },
    {
      id: 'park',
      type: 'fill',
      source: 'basemap',
      'source-layer': 'park',
      paint: { 'fill-color': p.green },
    },
    {
      id: 'water',
      type: 'fill',
      source: 'basemap',
      'source-layer': 'water',
      paint: { 'fill-color': p.water },
    },
    {
      id: 'waterway-river',
      type: 'line',
      source: 'basemap',
      'source-layer': 'waterway',
      minzoom: 3,
      filter: ['==', ['get', 'class'], 'river'],
      layout: { 'line-cap': 'round', 'line-join': 'round' },
      paint: {
        'line-color': p.river,
        'line-width': ['interpolate', ['exponential', 1.4], ['zoom'], 3, 0.5, 8, 1.5, 14, 6],
      },
    },
    // The street-level layers of an OpenMapTiles tileset (`serve --tiles`, `tiles build`); the
    // embedded world basemap has none of them.
    {
      id: 'building',
      type: 'fill',
      source: 'basemap',
      'source-layer': 'building',
      minzoom: 13,
      paint: { 'fill-color': p.building },
    },
    {
      id: 'road-minor',
      type: 'line',
      source: 'basemap',
      'source-layer': 'transportation',
      minzoom: 12,
      filter: ['match', ['get', 'class'], ['minor', 'service', 'track', 'path'], true, false],
      layout: { 'line-cap': 'round', 'line-join': 'round' },
      paint: {
        'line-color': p.road,
        'line-width': ['interpolate', ['exponential', 1.5], ['zoom'], 12, 0.5, 18, 10],
      },
    },
    {
      id: 'road-major',
      type: 'line',
      source: 'basemap',
      'source-layer': 'transportation',
      minzoom: 5,
      filter: [
        'match',
        ['get', 'class'],
        ['motorway', 'trunk', 'primary', 'secondary', 'tertiary'],
        true,
        false,
      ],
      layout: { 'line-cap': 'round', 'line-join': 'round' },
      paint: {
        'line-color': p.majorRoad,
        'line-width': ['interpolate', ['exponential', 1.5], ['zoom'], 5, 0.5, 18, 16],
      },
    },
    {
      id: 'boundary-country',
      type: 'line',
      source: 'basemap',
      'source-layer': 'boundary',
      filter: ['all', ['==', ['get', 'admin_level'], 2], ['==', ['get', 'maritime'], 0]],
      layout: { 'line-cap': 'round', 'line-join': 'round' },
      paint: {
        'line-color': p.border,
        'line-width': ['interpolate', ['linear'], ['zoom'], 0, 0.6, 4, 1, 10, 2.5],
        'line-dasharray': [3, 2],
      },
    },
    {
      id: 'place-town',
      type: 'symbol',
      source: 'basemap',
      'source-layer': 'place',
      minzoom: 6,
      filter: ['match', ['get', 'class'], ['town', 'village'], true, false],
      ...text(['interpolate', ['linear'], ['zoom'], 6, 10, 12, 14], p.town),
    },
    {
      id: 'place-city',
      type: 'symbol',
      source: 'basemap',
      'source-layer': 'place',
      minzoom: 2,
      filter: ['all', ['==', ['get', 'class'], 'city'], ['!', ['has', 'capital']]],
      ...text(['interpolate', ['linear'], ['zoom'], 2, 10, 10, 16], p.city),
    },
    {
      id: 'place-capital',
      type: 'symbol',
      source: 'basemap',
      'source-layer': 'place',
      minzoom: 2,
      filter: ['all', ['==', ['get', 'class'], 'city'], ['has', 'capital']],
      layout: {
        ...capital.layout,
        'icon-image': 'star',
        'icon-size': 0.8,
        'text-anchor': 'top',
        'text-offset': [0, 0.5],
      },
      paint: capital.paint,
    },
    {
      id: 'place-country',
      type: 'symbol',
      source: 'basemap',
      'source-layer': 'place',
      maxzoom: 9,
      filter: ['==', ['get', 'class'], 'country'],
      ...text(['interpolate', ['linear'], ['zoom'], 1, 10, 6, 16], p.country),
    },
  ];
}

/** The `vector` style of a theme: the browser draws the basemap's vector tiles. */
export function vectorStyle(theme: Theme, urls: StyleUrls, basemap: BasemapFacts): object {
  const q = keyQuery(urls.key);
  return {
    version: 8,
    name: `Whereabouts ${theme}`,
    center: [0, 20],
    zoom: 1,
    sources: {
      basemap: {
        type: 'vector',
        tiles: urls.tiles.map((t) => `${t}/v3/${theme}/v/{z}/{x}/{y}.pbf${q}`),
        minzoom: basemap.minzoom,
        // Deeper zooms magnify the deepest tiles (the client overzooms them).
        maxzoom: basemap.maxzoom,
        attribution: basemap.attribution,
      },
    },
    glyphs: `${urls.base}/v3/${theme}/glyphs/{fontstack}/{range}.pbf${q}`,
    sprite: `${urls.base}/v3/${theme}/sprite${q}`,
    layers: layers(theme),
  };
}

/** The `raster` style of a theme: the browser shows this server's PNG tiles. */
export function rasterStyle(theme: Theme, urls: StyleUrls, basemap: BasemapFacts): object {
  const q = keyQuery(urls.key);
  return {
    version: 8,
    name: `Whereabouts ${theme} (raster)`,
    center: [0, 20],
    zoom: 1,
    sources: {
      basemap: {
        type: 'raster',
        tiles: urls.tiles.map((t) => `${t}/v3/${theme}/r/{z}/{x}/{y}.png${q}`),
        tileSize: 256,
        minzoom: basemap.minzoom,
        maxzoom: MAX_TILE_ZOOM,
        attribution: basemap.attribution,
      },
    },
    layers: [{ id: 'basemap', type: 'raster', source: 'basemap' }],
  };
}

/** What a style needs to know of the basemap. */
export interface BasemapFacts {
  minzoom: number;
  maxzoom: number;
  attribution: string;
}

/** The style the core renders raster tiles of a theme with: its `vector` style (URLs unused). */
export function renderStyle(theme: Theme, basemap: BasemapFacts): object {
  return vectorStyle(theme, { base: 'http://localhost', tiles: ['http://localhost'], key: '' }, basemap);
}
