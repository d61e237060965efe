/**
 * The package's entry points as a user's program imports them (Node's own resolution of
 * `package.json` "exports", over the built `dist/`): the main entry is the Engine and what its
 * methods take, and each subpath gives what it promises.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.js';

/** The value names an entry exports, as a separate Node process importing it by name sees them. */
function exportsOf(specifier: string): string[] {
  const code = `const m = await import(${JSON.stringify(specifier)}); console.log(JSON.stringify(Object.keys(m).sort()));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as string[];
}

describe('package entry points', () => {
  it('whereabouts: the Engine, request parsing, database sync and upgrade', () => {
    expect(exportsOf('whereabouts')).toEqual([
      'ACCURACY_95_FACTOR',
      'Engine',
      'GeoMessage',
      'parseRequest',
      'parseRequestText',
      'syncDatabase',
      'upgradeDatabase',
    ]);
  });

  it('whereabouts/geocoding, whereabouts/remote, whereabouts/server', () => {
    expect(exportsOf('whereabouts/geocoding')).toEqual([
      'SEARCH_DEFAULT_LIMIT',
      'SEARCH_MAX_LIMIT',
      'describeZone',
      'parseAddressQuery',
      'preferredLanguages',
    ]);
    expect(exportsOf('whereabouts/maps')).toEqual([
      'Basemap',
      'DEFAULT_STATIC_SIZE',
      'MAX_STATIC_SIZE',
      'StaticMapError',
      'basemapFile',
      'decodePolyline',
      'errorImageOf',
      'fitView',
      'parseColor',
      'parseStaticMap',
      'renderStaticMap',
    ]);
    expect(exportsOf('whereabouts/remote')).toEqual(['REMOTE_MODES']);
    expect(exportsOf('whereabouts/server')).toEqual([
      'DEFAULT_BODY_LIMIT',
      'ObservationStore',
      'TokenStore',
      'buildServer',
      'newToken',
    ]);
  });

  it('keeps internal modules out of reach', () => {
    const r = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "await import('whereabouts/dist/native/wire.js')"],
      { cwd: root, encoding: 'utf8' },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
  });
});
