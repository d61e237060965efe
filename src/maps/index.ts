/**
 * `whereabouts/maps`: the basemap and static map images without the HTTP server.
 */
export { Basemap, type BasemapOptions, basemapFile } from './basemap.js';
export {
  DEFAULT_STATIC_SIZE,
  decodePolyline,
  errorImageOf,
  fitView,
  MAX_STATIC_SIZE,
  parseColor,
  parseStaticMap,
  renderStaticMap,
  StaticMapError,
  type StaticMapParams,
  type StaticMapSpec,
} from './staticmap.js';
