/**
 * `whereabouts reverse --lat X --lon Y [--zoom Z] [--accept-language L] [--addresses FILE]`:
 * prints the `/reverse` body (without `balance`).
 */
import { Engine } from '../engine.js';
import { joinNegativeValues } from './timezone.js';
import { parseFlags, UsageError } from './usage.js';

export async function runReverse(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(joinNegativeValues(argv, ['--lat', '--lon']), {
    lat: { type: 'string' },
    lon: { type: 'string' },
    zoom: { type: 'string' },
    'accept-language': { type: 'string' },
    places: { type: 'string' },
    addresses: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError('reverse takes no positional arguments');
  if (values.lat === undefined || values.lon === undefined)
    throw new UsageError('reverse needs --lat and --lon');
  // only the places are needed: skip the timezone polygons
  const engine = await Engine.open({
    timezones: false,
    ...(values.places === undefined ? {} : { places: values.places }),
    ...(values.addresses === undefined ? {} : { addresses: values.addresses }),
  });
  try {
    const response = engine.reverse({
      lat: values.lat,
      lon: values.lon,
      zoom: values.zoom,
      acceptLanguage: values['accept-language'],
    });
    process.stdout.write(`${JSON.stringify(response)}\n`);
    return response.status === 'ok' ? 0 : 1;
  } finally {
    engine.close();
  }
}
