/**
 * `whereabouts timezone --lat X --lon Y`: prints the `/timezone` body (without `balance`).
 */
import { Engine } from '../engine.js';
import { parseFlags, UsageError } from './usage.js';

/**
 * `--lat -33.9` reads to parseArgs like a flag; join a negative number to its flag
 * (`--lat=-33.9`) so that users can write coordinates as they come.
 */
export function joinNegativeValues(argv: string[], names: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const next = argv[i + 1];
    if (names.includes(a) && next !== undefined && /^-\d|^-\.\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

export async function runTimezone(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(joinNegativeValues(argv, ['--lat', '--lon']), {
    lat: { type: 'string' },
    lon: { type: 'string' },
    timezones: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError('timezone takes no positional arguments');
  if (values.lat === undefined || values.lon === undefined)
    throw new UsageError('timezone needs --lat and --lon');
  const engine = await Engine.open(values.timezones === undefined ? {} : { timezones: values.timezones });
  try {
    const response = engine.timezone({ lat: values.lat, lon: values.lon });
    process.stdout.write(`${JSON.stringify(response)}\n`);
    return response.status === 'ok' ? 0 : 1;
  } finally {
    engine.close();
  }
}
