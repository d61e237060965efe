/**
 * `whereabouts staticmap --center LAT,LON --zoom Z --out FILE`: a static map image (spec 4.8)
 * drawn from the embedded basemap (or --tiles FILE) without a server. The flags are the query
 * parameters of `GET /v3/staticmap`; --markers and --path may be repeated.
 */
import { writeFileSync } from 'node:fs';
import { Basemap } from '../maps/basemap.js';
import { renderStaticMap, StaticMapError } from '../maps/staticmap.js';
import { parseFlags, UsageError } from './usage.js';

export async function runStaticMap(argv: string[]): Promise<number> {
  // `--center -33.9,18.4` reads like a flag to parseArgs: join a value that starts with `-`.
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const next = argv[i + 1];
    if (['--center', '--markers', '--path'].includes(a) && next !== undefined && /^-[\d.]/.test(next)) {
      joined.push(`${a}=${next}`);
      i++;
    } else joined.push(a);
  }
  const { values, positionals } = parseFlags(joined, {
    center: { type: 'string' },
    zoom: { type: 'string' },
    size: { type: 'string' },
    scale: { type: 'string' },
    format: { type: 'string' },
    maptype: { type: 'string' },
    markers: { type: 'string', multiple: true },
    path: { type: 'string', multiple: true },
    tiles: { type: 'string' },
    out: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError('staticmap takes no positional arguments');
  if (values.out === undefined) throw new UsageError('staticmap needs --out FILE');
  let format = values.format;
  if (format === undefined && /\.jpe?g$/i.test(values.out)) format = 'jpg';
  const basemap = values.tiles === undefined ? Basemap.open() : Basemap.open(values.tiles);
  try {
    const image = await renderStaticMap(
      {
        center: values.center,
        zoom: values.zoom,
        size: values.size,
        scale: values.scale,
        format,
        maptype: values.maptype,
        markers: values.markers,
        path: values.path,
      },
      { basemap },
    );
    writeFileSync(values.out, image.body);
    const { spec } = image;
    process.stdout.write(
      `${values.out}: ${spec.width * spec.scale}x${spec.height * spec.scale} ${spec.format}, centre ${spec.lat.toFixed(5)},${spec.lon.toFixed(5)}, zoom ${spec.zoom}\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof StaticMapError) throw new UsageError(err.message);
    throw err;
  }
}
