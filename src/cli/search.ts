/**
 * `whereabouts search [--limit N] [--countrycodes de,fr] [--viewbox l,r,t,b]
 * [--accept-language L] QUERY...`: prints the `/search` body (without `balance`).
 */
import { Engine } from '../engine.js';
import { parseFlags, UsageError } from './usage.js';

export async function runSearch(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    limit: { type: 'string' },
    countrycodes: { type: 'string' },
    viewbox: { type: 'string' },
    'accept-language': { type: 'string' },
    search: { type: 'string' },
  });
  if (positionals.length === 0)
    throw new UsageError('search needs a query, e.g. whereabouts search "paris, texas"');
  // only the search places are needed
  const engine = await Engine.open({
    timezones: false,
    places: false,
    land: false,
    ipDatabases: false,
    ...(values.search === undefined ? {} : { search: values.search }),
  });
  try {
    const response = engine.search({
      q: positionals.join(' '),
      limit: values.limit,
      countrycodes: values.countrycodes,
      viewbox: values.viewbox,
      acceptLanguage: values['accept-language'],
    });
    process.stdout.write(`${JSON.stringify(response)}\n`);
    return response.status === 'ok' ? 0 : 1;
  } finally {
    engine.close();
  }
}
