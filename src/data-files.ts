/**
 * Where the embedded data lives: the simulated demo station database, land polygons,
 * the country table, and the default IP database shipped by an npm dependency.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root (the folder holding package.json and data/). */
export const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The embedded station database: simulated stations (mcc 1, the ITU test network). */
export const defaultDbDir = join(packageRoot, 'data', 'demo-db');

/** Natural Earth 1:10m land, for border strictness. */
export const landFile = join(packageRoot, 'data', 'land.bin');

/** Timezone polygons from geo-tz's timezone-boundary-builder data (scripts/build-timezones.mjs). */
export const timezonesFile = join(packageRoot, 'data', 'timezones.bin');

/** GeoNames places with admin names, for reverse geocoding (scripts/build-places.mjs). */
export const placesFile = join(packageRoot, 'data', 'places.bin');

/** GeoNames places with alternate names, for forward geocoding (scripts/build-search.mjs). */
export const searchFile = join(packageRoot, 'data', 'search.bin');

/** Natural Earth admin-0 country polygons, for reverse geocoding (scripts/build-countries.mjs). */
export const countryPolygonsFile = join(packageRoot, 'data', 'countries.bin');

/** Country representative points and radii, for country-level IP answers. */
export const countriesFile = join(packageRoot, 'data', 'countries.csv');

/**
 * The country-level IP database of `@ip-location-db/geo-whois-asn-country-mmdb` (CC0),
 * or an empty list when the package is not installed.
 */
export function defaultIpDatabases(): string[] {
  try {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/package.json');
    const file = join(dirname(pkg), 'geo-whois-asn-country.mmdb');
    return existsSync(file) ? [file] : [];
  } catch {
    return [];
  }
}
