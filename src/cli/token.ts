/**
 * `whereabouts token create|update|revoke|list`: manages the access tokens in DIR/tokens.sqlite,
 * or in PostgreSQL with `--store postgres://...` (or WHEREABOUTS_STORE_URL).
 *
 * A running server sees the changes within its token cache time (seconds), so tokens can be
 * managed while it serves. `create` is the only command that prints a token in full; every
 * other output masks it, so logs of routine administration never hold a usable secret.
 */
import {
  isPostgresUrl,
  MAP_SERVICES,
  type MapService,
  maskToken,
  openTokenStorage,
  SCOPES,
  type Scope,
  STORE_URL_ENV,
  TOKEN_DEFAULTS,
  TokenError,
  type TokenInput,
  type TokenRecord,
} from '../tokens/index.js';
import { parseFlags, UsageError } from './usage.js';

const USAGE = `token commands:
  whereabouts token create --db DIR [SETTINGS]     prints the new token (the only time it is shown)
  whereabouts token update TOKEN --db DIR [SETTINGS]
  whereabouts token revoke TOKEN --db DIR          makes the token inactive (kept for its history)
  TOKEN of update and revoke: "-" reads it from standard input; left out, it is taken from
  WHEREABOUTS_TOKEN. Either keeps it out of the process list, where an argument is visible.
  whereabouts token list --db DIR                  every token, masked
  Instead of --db DIR: --store DIR, or --store postgres://USER@HOST/DB for tokens in PostgreSQL
  (servers sharing it see changes within seconds); the URL may come from WHEREABOUTS_STORE_URL.
SETTINGS:
  --label L  --geolocation N  --geocoding N  (per UTC day; defaults 10000 and 5000)
  --per-second N  --per-minute N  (metered calls; default unlimited; --no-per-second, --no-per-minute)
  --slots N  (device plan: distinct device ids per day; --no-slots)
  --gps | --no-gps  (accept GPS submissions; default off)
  --scope S... (geocoding:forward, geocoding:reverse, sync; default the two geocoding ones)
  --service S... (maps, static; default both)
  --referrer PATTERN... (at most 10)  --ip ADDR_OR_CIDR... (at most 5)
  On create a list flag replaces the default list; on update it adds to the stored list.
  --clear-scopes, --clear-services, --clear-referrers, --clear-ips empty a list first;
  --remove-scope, --remove-service, --remove-referrer, --remove-ip take entries out.`;

const settingFlags = {
  db: { type: 'string' },
  store: { type: 'string' },
  label: { type: 'string' },
  geolocation: { type: 'string' },
  geocoding: { type: 'string' },
  'per-second': { type: 'string' },
  'per-minute': { type: 'string' },
  'no-per-second': { type: 'boolean' },
  'no-per-minute': { type: 'boolean' },
  slots: { type: 'string' },
  'no-slots': { type: 'boolean' },
  gps: { type: 'boolean' },
  'no-gps': { type: 'boolean' },
  scope: { type: 'string', multiple: true },
  service: { type: 'string', multiple: true },
  referrer: { type: 'string', multiple: true },
  ip: { type: 'string', multiple: true },
  'clear-scopes': { type: 'boolean' },
  'clear-services': { type: 'boolean' },
  'clear-referrers': { type: 'boolean' },
  'clear-ips': { type: 'boolean' },
  'remove-scope': { type: 'string', multiple: true },
  'remove-service': { type: 'string', multiple: true },
  'remove-referrer': { type: 'string', multiple: true },
  'remove-ip': { type: 'string', multiple: true },
} as const;

type Values = ReturnType<typeof parseFlags<typeof settingFlags>>['values'];

/** Runs a `token` subcommand; resolves to the exit code (2 usage or invalid settings, 1 unknown token). */
export async function runToken(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (!['create', 'update', 'revoke', 'list'].includes(sub))
    throw new UsageError(`unknown token command "${sub}" (create, update, revoke, list)`);
  const { values, positionals } = parseFlags(rest, settingFlags);
  const where = values.store ?? values.db ?? process.env[STORE_URL_ENV];
  if (!where)
    throw new UsageError(`token ${sub} needs --db DIR or --store postgres://... (or ${STORE_URL_ENV})`);
  if (values.db !== undefined && isPostgresUrl(values.db))
    throw new UsageError('--db takes a directory; a PostgreSQL URL goes in --store');
  const wantsToken = sub === 'update' || sub === 'revoke';
  if (wantsToken && positionals.length > 1) throw new UsageError(`token ${sub} takes one TOKEN`);
  if (!wantsToken && positionals.length > 0)
    throw new UsageError(`token ${sub} takes no TOKEN argument (got "${maskToken(positionals[0] ?? '')}")`);
  if (sub !== 'create' && sub !== 'update') {
    const extra = Object.keys(values).filter((k) => k !== 'db' && k !== 'store');
    if (extra.length > 0) throw new UsageError(`token ${sub} takes only --db or --store (got --${extra[0]})`);
  }

  const given = wantsToken ? await tokenArgument(sub, positionals[0]) : '';
  const store = await openTokenStorage(where, { sqlite: { cacheMs: 0 } });
  try {
    switch (sub) {
      case 'create': {
        const record = await store.create(settings(values, undefined));
        print(record, false);
        return 0;
      }
      case 'update': {
        const token = given;
        const current = store.get(token);
        if (!current) throw new TokenError('NOT_FOUND', `no token ${maskToken(token)}`);
        print(await store.update(token, settings(values, current)), true);
        return 0;
      }
      case 'revoke':
        print(await store.revoke(given), true);
        return 0;
      default:
        process.stdout.write(`${JSON.stringify((await store.list()).map(masked), null, 2)}\n`);
        return 0;
    }
  } catch (err) {
    if (err instanceof TokenError && err.code === 'INVALID') throw new UsageError(err.message);
    throw err;
  } finally {
    await store.close();
  }
}

/** The environment variable `token update` and `revoke` read the token from when no TOKEN is given. */
export const TOKEN_ENV = 'WHEREABOUTS_TOKEN';

/**
 * The token of `update` and `revoke`: `-` reads it from standard input (its first line), none
 * takes it from {@link TOKEN_ENV}, anything else is the token itself (visible in the process
 * list while the command runs, so the other two are the safer forms).
 */
async function tokenArgument(sub: string, positional: string | undefined): Promise<string> {
  let token: string | undefined;
  if (positional === '-') {
    let text = '';
    for await (const chunk of process.stdin) {
      text += String(chunk);
      if (text.length > 4096) break;
    }
    token = text.split(/\r?\n/, 1)[0];
  } else {
    token = positional ?? process.env[TOKEN_ENV];
  }
  token = token?.trim();
  if (token === undefined || token === '')
    throw new UsageError(
      `token ${sub} needs the token: "-" to read it from standard input, or ${TOKEN_ENV}, or as an argument`,
    );
  return token;
}

function print(record: TokenRecord, mask: boolean): void {
  process.stdout.write(`${JSON.stringify(mask ? masked(record) : record, null, 2)}\n`);
}

function masked(record: TokenRecord): TokenRecord {
  return { ...record, token: maskToken(record.token) };
}

function whole(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text)))
    throw new UsageError(`--${flag} needs a whole number of 0 or more, not "${text}"`);
  return Number(text);
}

function conflict(values: Values, a: keyof Values, b: keyof Values): void {
  if (values[a] !== undefined && values[b] !== undefined)
    throw new UsageError(`--${String(a)} and --${String(b)} contradict each other`);
}

/**
 * A list setting from the flags, over `current` (the stored list, or the default on create).
 * Entries given on create replace the default; on update they are added to the stored list.
 * Undefined when no flag touches the list.
 */
function listSetting(
  current: readonly string[],
  creating: boolean,
  clear: boolean | undefined,
  add: string[] | undefined,
  remove: string[] | undefined,
): string[] | undefined {
  if (!clear && !add && !remove) return undefined;
  const base = clear || (creating && add) ? [] : [...current];
  const gone = new Set((remove ?? []).map((s) => s.trim()));
  return [...base, ...(add ?? []).map((s) => s.trim())].filter((s) => !gone.has(s));
}

function settings(values: Values, current: TokenRecord | undefined): TokenInput {
  conflict(values, 'gps', 'no-gps');
  conflict(values, 'per-second', 'no-per-second');
  conflict(values, 'per-minute', 'no-per-minute');
  conflict(values, 'slots', 'no-slots');
  const input: TokenInput = {};
  if (values.label !== undefined) input.label = values.label;
  const geolocation = whole('geolocation', values.geolocation);
  if (geolocation !== undefined) input.geolocationPerDay = geolocation;
  const geocoding = whole('geocoding', values.geocoding);
  if (geocoding !== undefined) input.geocodingPerDay = geocoding;
  const perSecond = whole('per-second', values['per-second']);
  if (perSecond !== undefined) input.perSecond = perSecond;
  if (values['no-per-second']) input.perSecond = null;
  const perMinute = whole('per-minute', values['per-minute']);
  if (perMinute !== undefined) input.perMinute = perMinute;
  if (values['no-per-minute']) input.perMinute = null;
  const slots = whole('slots', values.slots);
  if (slots !== undefined) input.slots = slots;
  if (values['no-slots']) input.slots = null;
  if (values.gps) input.gps = true;
  if (values['no-gps']) input.gps = false;

  const creating = current === undefined;
  const scopes = listSetting(
    current?.scopes ?? TOKEN_DEFAULTS.scopes,
    creating,
    values['clear-scopes'],
    values.scope,
    values['remove-scope'],
  );
  if (scopes) {
    for (const s of scopes)
      if (!(SCOPES as readonly string[]).includes(s))
        throw new UsageError(`unknown scope "${s}"; scopes are ${SCOPES.join(', ')}`);
    input.scopes = scopes as Scope[];
  }
  const services = listSetting(
    current?.services ?? TOKEN_DEFAULTS.services,
    creating,
    values['clear-services'],
    values.service,
    values['remove-service'],
  );
  if (services) {
    for (const s of services)
      if (!(MAP_SERVICES as readonly string[]).includes(s))
        throw new UsageError(`unknown service "${s}"; services are ${MAP_SERVICES.join(', ')}`);
    input.services = services as MapService[];
  }
  const referrers = listSetting(
    current?.referrers ?? [],
    creating,
    values['clear-referrers'],
    values.referrer,
    values['remove-referrer'],
  );
  if (referrers) input.referrers = referrers;
  const ips = listSetting(current?.ips ?? [], creating, values['clear-ips'], values.ip, values['remove-ip']);
  if (ips) input.ips = ips;
  return input;
}
