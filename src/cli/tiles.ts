/**
 * `whereabouts tiles build --from EXTRACT.osm.pbf --out FILE.mbtiles`: street-level vector
 * tiles (OpenMapTiles schema, z0 to 14) of a user's OpenStreetMap extract, made by Debian's
 * `tilemaker` with the OpenMapTiles configuration it ships, for `serve --tiles FILE`.
 *
 * The shipped configuration also reads shapefiles (ocean polygons, Natural Earth land cover)
 * that no package provides: the layers that need them are left out unless `--shapefiles DIR`
 * holds them. The file is written aside and renamed into place once tilemaker succeeded and the
 * core opened it, so a failed build never leaves a broken tileset behind. See docs/maps.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { Basemap } from '../maps/basemap.js';
import { parseFlags, UsageError } from './usage.js';

/** Where Debian's tilemaker package puts its example configurations. */
export const TILEMAKER_EXAMPLES = '/usr/share/doc/tilemaker/examples';

interface TilemakerLayer {
  source?: string;
  [key: string]: unknown;
}

interface TilemakerConfig {
  layers: Record<string, TilemakerLayer>;
  settings: Record<string, unknown> & { filemetadata?: Record<string, unknown> };
}

/**
 * The OpenMapTiles configuration for one build: layers whose shapefile is not under
 * `shapefiles` left out (named in `dropped`), the tileset named after the extract.
 */
export function buildConfig(
  config: TilemakerConfig,
  shapefiles: string | undefined,
  name: string,
): { config: TilemakerConfig; dropped: string[] } {
  const layers: Record<string, TilemakerLayer> = {};
  const dropped: string[] = [];
  for (const [layer, spec] of Object.entries(config.layers)) {
    if (spec.source === undefined) layers[layer] = spec;
    else if (shapefiles !== undefined && existsSync(join(shapefiles, spec.source))) {
      layers[layer] = { ...spec, source: join(shapefiles, spec.source) };
    } else dropped.push(layer);
  }
  const metadata = { ...(config.settings.filemetadata ?? {}) };
  // the example's tile URL names its demo host: a server writes its own into styles
  delete metadata.tiles;
  return {
    config: { layers, settings: { ...config.settings, name, filemetadata: metadata } },
    dropped,
  };
}

function tilemakerPath(): string | undefined {
  const r = spawnSync('tilemaker', ['--help'], { encoding: 'utf8' });
  return r.error === undefined ? 'tilemaker' : undefined;
}

/** Runs `whereabouts tiles ...`; resolves to the exit code. */
export async function runTiles(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'build') throw new UsageError('tiles takes the subcommand build');
  const { values, positionals } = parseFlags(rest, {
    from: { type: 'string' },
    out: { type: 'string' },
    config: { type: 'string' },
    process: { type: 'string' },
    shapefiles: { type: 'string' },
  });
  if (values.from === undefined || values.out === undefined) {
    throw new UsageError('tiles build needs --from EXTRACT.osm.pbf and --out FILE.mbtiles');
  }
  if (positionals.length > 0)
    throw new UsageError(`tiles build takes no files (got ${positionals.join(' ')})`);
  const from = resolve(values.from);
  const out = resolve(values.out);
  if (!existsSync(from)) throw new Error(`${values.from}: no such file`);
  if (!from.endsWith('.pbf')) throw new UsageError('--from takes an OpenStreetMap extract in PBF (.osm.pbf)');
  if (!out.endsWith('.mbtiles')) throw new UsageError('--out takes a file name ending in .mbtiles');
  if (!existsSync(dirname(out))) throw new Error(`${dirname(out)}: no such directory`);
  const configFile = values.config ?? join(TILEMAKER_EXAMPLES, 'config-openmaptiles.json');
  const processFile = resolve(values.process ?? join(TILEMAKER_EXAMPLES, 'process-openmaptiles.lua'));
  if (tilemakerPath() === undefined) {
    throw new Error('tiles build needs tilemaker on the PATH (Debian: apt-get install tilemaker)');
  }
  for (const f of [configFile, processFile]) {
    if (!existsSync(f))
      throw new Error(`${f}: no such file (tilemaker's OpenMapTiles configuration; see --config, --process)`);
  }

  const base = JSON.parse(readFileSync(configFile, 'utf8')) as TilemakerConfig;
  const { config, dropped } = buildConfig(
    base,
    values.shapefiles,
    basename(from).replace(/\.osm\.pbf$|\.pbf$/, ''),
  );
  if (dropped.length > 0) {
    process.stderr.write(
      `tiles: left out (their shapefiles are not in --shapefiles): ${dropped.join(', ')}\n`,
    );
  }
  const work = mkdtempSync(join(tmpdir(), 'whereabouts-tiles-'));
  const aside = `${out}.partial-${process.pid}.mbtiles`;
  try {
    writeFileSync(join(work, 'config.json'), JSON.stringify(config, null, 1));
    const code = await new Promise<number>((done, fail) => {
      const child = spawn(
        'tilemaker',
        ['--input', from, '--output', aside, '--config', join(work, 'config.json'), '--process', processFile],
        // its progress goes to standard error as it comes: standard output is the summary
        { cwd: work, stdio: ['ignore', 2, 2] },
      );
      child.on('error', fail);
      child.on('close', (c) => done(c ?? 1));
    });
    if (code !== 0) throw new Error(`tilemaker failed (exit ${code}); nothing written to ${values.out}`);
    // the core opens it as serve would: a tileset it cannot read is not put in place
    const set = Basemap.open(aside, { rasterCacheBytes: 0 });
    renameSync(aside, out);
    process.stdout.write(
      `${JSON.stringify({ out: values.out, tiles: set.tileCount, minzoom: set.minzoom, maxzoom: set.maxzoom })}\n`,
    );
    return 0;
  } finally {
    rmSync(aside, { force: true });
    rmSync(work, { recursive: true, force: true });
  }
}
