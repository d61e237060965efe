/**
 * `whereabouts serve`: the HTTP service on every core.
 *
 * The primary process forks one worker per core (node:cluster) and restarts a worker that
 * dies; each worker opens the engine (the station files are memory-mapped, so workers share
 * the page cache), the token store and the observation store, and serves the same socket.
 * SIGTERM or SIGINT stops accepting connections, finishes the requests in flight, closes the
 * stores and exits 0. `--workers 0` serves from this one process without a supervisor.
 */
import cluster, { type Worker } from 'node:cluster';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { join } from 'node:path';
import { Engine, type EngineOptions } from '../engine.js';
import { SharedLearning } from '../generations/follow.js';
import { GenerationStore } from '../generations/store.js';
import { LearnBatcher } from '../learning/submissions.js';
import { Basemap, basemapFile } from '../maps/basemap.js';
import { type ObservationStorage, ObservationStore, PgObservationStore } from '../observations/index.js';
import { keepPrivate } from '../private-file.js';
import { REMOTE_MODES, type RemoteMode, type RemoteOptions } from '../remote/index.js';
import {
  buildServer,
  DEFAULT_BODY_LIMIT,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from '../server/app.js';
import { type Channel, LedgerClient, serveLedger, type TokenAccess } from '../server/ledger.js';
import { MAP_METERINGS, type MapMetering, type MapsOptions } from '../server/maps.js';
import { type TrustProxy, trustFunction } from '../server/proxy.js';
import {
  isPostgresUrl,
  PgTokenStore,
  STORE_URL_ENV,
  type TokenStorage,
  TokenStore,
} from '../tokens/index.js';
import { parseFlags, UsageError } from './usage.js';

/** Default address: loopback only; say `--host 0.0.0.0` to serve the network. */
export const DEFAULT_HOST = '127.0.0.1';
/** Default port. */
export const DEFAULT_PORT = 8080;
/** The environment variable holding the remote token, so that it stays out of process lists. */
export const REMOTE_TOKEN_ENV = 'WHEREABOUTS_REMOTE_TOKEN';
/** How long a shutdown may take before the primary kills what is left. */
const SHUTDOWN_GRACE_MS = 30_000;
/** How often a server looks for a new database generation and other workers' learned stations. */
const RELOAD_INTERVAL_MS = 1_000;
/**
 * Workers that may fail to start, one after another, before any listens, and the primary gives
 * up: a database that cannot be opened fails every time, while a start that met a passing
 * condition (a fork refused under memory pressure, a file another process held) succeeds on
 * the next try.
 */
const START_ATTEMPTS = 3;

interface ServeConfig {
  /** Station database directory; absent: the embedded demo database (demo mode). */
  db?: string;
  /** Demo mode (no --db): the store in the user's data directory and a demo key, printed with the page's URL. */
  demo: boolean;
  /** The demo key (demo mode, primary process only). */
  demoKey?: string;
  /** Directory of tokens.sqlite and observations.sqlite; default: the station database directory. */
  store: string;
  /** Where tokens live: `store` (SQLite), or a PostgreSQL URL shared with other servers. */
  tokens: string;
  host: string;
  port: number;
  workers: number;
  logLevel: string;
  bodyLimit: number;
  trustProxy: TrustProxy;
  requestTimeoutMs: number;
  maxConnections: number;
  healthDetail: boolean;
  /** SQLite `synchronous` of the token and observation stores. */
  sync: 'FULL' | 'NORMAL';
  /** How long charges gather before one commit (TokenStore groupMs). */
  groupMs: number;
  /**
   * With a PostgreSQL store: how often the elected compactor folds the shared GPS submissions
   * into a published generation (ms); 0: this server never compacts (docs/deploy.md).
   */
  learnIntervalMs: number;
  engine: EngineOptions;
  /** The map routes; undefined with --no-maps. */
  maps: MapsConfig | undefined;
}

/** The `--tiles` and map flags (docs/maps.md). */
interface MapsConfig {
  tiles: string;
  publicUrl?: string;
  tileUrl?: string;
  subdomains?: string[];
  supportEmail?: string;
  metering: MapMetering;
  rasterCacheBytes: number;
  rasterCacheDir: string | undefined;
}

/** Messages from a worker to the primary. */
type WorkerMessage = { type: 'fatal'; message: string };

function integerFlag(value: string | undefined, name: string, fallback: number, min: number, max: number) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} takes an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * `--trust-proxy` with no value (followed by nothing or by another flag), the form of earlier
 * versions, as `--trust-proxy loopback`: a proxy on this machine. It used to trust every hop,
 * which let a client pick its own address by writing `X-Forwarded-For`.
 */
function bareTrustProxy(argv: string[]): string[] {
  return argv.map((arg, i) => {
    const next = argv[i + 1];
    return arg === '--trust-proxy' && (next === undefined || next.startsWith('--'))
      ? '--trust-proxy=loopback'
      : arg;
  });
}

/** `--trust-proxy`'s value: a hop count, or addresses, CIDR subnets and named ranges (checked). */
function trustProxyFlag(value: string | undefined): TrustProxy {
  if (value === undefined) return false;
  const setting: TrustProxy = /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  try {
    trustFunction(setting);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return setting;
}

function parseConfig(argv: string[]): ServeConfig {
  const { values, positionals } = parseFlags(bareTrustProxy(argv), {
    db: { type: 'string' },
    store: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    workers: { type: 'string' },
    'log-level': { type: 'string' },
    'body-limit': { type: 'string' },
    'trust-proxy': { type: 'string' },
    'request-timeout': { type: 'string' },
    'max-connections': { type: 'string' },
    'health-detail': { type: 'boolean' },
    sync: { type: 'string' },
    'group-ms': { type: 'string' },
    'learn-interval': { type: 'string' },
    land: { type: 'string' },
    'no-land': { type: 'boolean' },
    'ip-db': { type: 'string', multiple: true },
    'remote-url': { type: 'string', multiple: true },
    'remote-token': { type: 'string' },
    'remote-mode': { type: 'string' },
    'remote-path': { type: 'string' },
    'remote-timeout': { type: 'string' },
    'remote-accuracy': { type: 'string' },
    tiles: { type: 'string' },
    'no-maps': { type: 'boolean' },
    'public-url': { type: 'string' },
    'tile-url': { type: 'string' },
    'tile-subdomains': { type: 'string' },
    'support-email': { type: 'string' },
    'map-metering': { type: 'string' },
    'raster-cache-mb': { type: 'string' },
    'raster-cache-dir': { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError('serve takes no positional arguments');
  const logLevel = values['log-level'] ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new UsageError('--log-level takes fatal, error, warn, info, debug, trace or silent');
  }
  const sync = (values.sync ?? 'full').toUpperCase();
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new UsageError('--sync takes full or normal');
  const demo = values.db === undefined;
  const engine: EngineOptions = demo ? {} : { db: values.db };
  if (values['no-land']) engine.land = false;
  else if (values.land !== undefined) engine.land = values.land;
  if (values['ip-db']) engine.ipDatabases = values['ip-db'];
  const remote = remoteConfig(values);
  if (remote) engine.remote = remote;
  // --store (or WHEREABOUTS_STORE_URL) is a directory, or a PostgreSQL URL for the tokens, in
  // which case GPS submissions stay in the station database directory.
  const storeFlag = values.store ?? process.env[STORE_URL_ENV];
  const postgres = storeFlag !== undefined && isPostgresUrl(storeFlag);
  if (demo && postgres)
    throw new UsageError('--store postgres://... needs --db DIR (the demo mode keeps its tokens in SQLite)');
  if (values['learn-interval'] !== undefined && !postgres)
    throw new UsageError(
      '--learn-interval needs --store postgres://... (learning shared by several servers)',
    );
  // Shared learning: the servers' directories hold the published generations; none learns or
  // compacts on its own (docs/deploy.md, "Learning across servers").
  if (postgres) engine.compaction = false;
  return {
    db: values.db,
    demo,
    store: postgres ? (values.db ?? demoStoreDir()) : (storeFlag ?? values.db ?? demoStoreDir()),
    tokens: storeFlag ?? values.db ?? demoStoreDir(),
    host: values.host ?? DEFAULT_HOST,
    port: integerFlag(values.port, 'port', DEFAULT_PORT, 0, 65535),
    workers: integerFlag(values.workers, 'workers', availableParallelism(), 0, 256),
    logLevel,
    bodyLimit: integerFlag(values['body-limit'], 'body-limit', DEFAULT_BODY_LIMIT, 1024, 64 * 1024 * 1024),
    trustProxy: trustProxyFlag(values['trust-proxy']),
    requestTimeoutMs: integerFlag(
      values['request-timeout'],
      'request-timeout',
      DEFAULT_REQUEST_TIMEOUT_MS,
      100,
      3_600_000,
    ),
    maxConnections: integerFlag(
      values['max-connections'],
      'max-connections',
      DEFAULT_MAX_CONNECTIONS,
      1,
      1_000_000,
    ),
    healthDetail: values['health-detail'] === true,
    sync,
    groupMs: integerFlag(values['group-ms'], 'group-ms', 0, 0, 100),
    learnIntervalMs: integerFlag(values['learn-interval'], 'learn-interval', 300, 0, 86_400) * 1000,
    engine,
    maps: values['no-maps'] ? undefined : mapsConfig(values),
  };
}

/** The map flags as options of the map routes. */
function mapsConfig(values: {
  tiles?: string;
  'public-url'?: string;
  'tile-url'?: string;
  'tile-subdomains'?: string;
  'support-email'?: string;
  'map-metering'?: string;
  'raster-cache-mb'?: string;
  'raster-cache-dir'?: string;
}): MapsConfig {
  const metering = values['map-metering'] ?? 'none';
  if (!(MAP_METERINGS as readonly string[]).includes(metering)) {
    throw new UsageError(`--map-metering takes ${MAP_METERINGS.join(', ')}`);
  }
  for (const flag of ['public-url', 'tile-url'] as const) {
    const url = values[flag];
    if (url !== undefined && !/^https?:\/\/[^/]/.test(url))
      throw new UsageError(`--${flag} takes an http(s) URL`);
  }
  const config: MapsConfig = {
    tiles: values.tiles ?? basemapFile,
    metering: metering as MapMetering,
    rasterCacheBytes: integerFlag(values['raster-cache-mb'], 'raster-cache-mb', 64, 0, 65_536) * 1024 * 1024,
    rasterCacheDir: values['raster-cache-dir'],
  };
  if (values['public-url'] !== undefined) config.publicUrl = values['public-url'];
  if (values['tile-url'] !== undefined) config.tileUrl = values['tile-url'];
  if (values['tile-subdomains'] !== undefined) {
    const subdomains = values['tile-subdomains'].split(',').map((s) => s.trim());
    if (subdomains.some((s) => !/^[a-z0-9-]+$/i.test(s))) {
      throw new UsageError('--tile-subdomains takes names separated by commas (a,b,c)');
    }
    config.subdomains = subdomains;
  }
  if (values['support-email'] !== undefined) config.supportEmail = values['support-email'];
  return config;
}

/** Opens the basemap of the map routes; a missing or damaged tileset stops the start. */
function openMaps(config: MapsConfig | undefined): MapsOptions | undefined {
  if (!config) return undefined;
  const { tiles, rasterCacheBytes, rasterCacheDir, ...rest } = config;
  return { basemap: Basemap.open(tiles, { rasterCacheBytes, rasterCacheDir }), ...rest };
}

/** The `--remote-*` flags as engine options; undefined when no remote is configured. */
function remoteConfig(values: {
  'remote-url'?: string[];
  'remote-token'?: string;
  'remote-mode'?: string;
  'remote-path'?: string;
  'remote-timeout'?: string;
  'remote-accuracy'?: string;
}): RemoteOptions | undefined {
  const urls = values['remote-url'] ?? [];
  const mode = values['remote-mode'];
  if (mode !== undefined && !(REMOTE_MODES as readonly string[]).includes(mode)) {
    throw new UsageError(`--remote-mode takes ${REMOTE_MODES.join(', ')}`);
  }
  if (mode === undefined || mode === 'local') {
    if (urls.length > 0 && mode === undefined) {
      throw new UsageError('--remote-url needs --remote-mode fallback or remote-first');
    }
    return undefined;
  }
  if (urls.length === 0) throw new UsageError(`--remote-mode ${mode} needs --remote-url URL`);
  for (const url of urls) {
    if (!/^https?:\/\/[^/]/.test(url)) throw new UsageError(`--remote-url takes http(s) URLs, not ${url}`);
  }
  const path = values['remote-path'];
  if (path !== undefined && !path.startsWith('/')) throw new UsageError('--remote-path must start with /');
  const timeout = values['remote-timeout'];
  const accuracy = values['remote-accuracy'];
  const timeoutMs = timeout === undefined ? undefined : integerFlag(timeout, 'remote-timeout', 0, 1, 600_000);
  const accuracyThreshold =
    accuracy === undefined ? undefined : integerFlag(accuracy, 'remote-accuracy', 0, 0, 20_000_000);
  const token = values['remote-token'] ?? process.env[REMOTE_TOKEN_ENV];
  if (token === undefined || token.trim() === '') {
    throw new UsageError(`--remote-mode ${mode} needs a token: set ${REMOTE_TOKEN_ENV} (or --remote-token)`);
  }
  const remote: RemoteOptions = { urls, token, mode: mode as RemoteMode };
  if (path !== undefined) remote.path = path;
  if (timeoutMs !== undefined) remote.timeoutMs = timeoutMs;
  if (accuracyThreshold !== undefined) remote.accuracyThreshold = accuracyThreshold;
  return remote;
}

/** A pino-shaped log line from the primary, so that the whole output is JSON lines. */
function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  const levels = { info: 30, warn: 40, error: 50 };
  process.stdout.write(
    `${JSON.stringify({ level: levels[level], time: Date.now(), pid: process.pid, role: 'primary', msg, ...fields })}\n`,
  );
}

/** Whether a line of `level` passes `--log-level`. */
function logged(setting: string, level: 'info' | 'warn' | 'error'): boolean {
  const order = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
  return order.indexOf(level) >= order.indexOf(setting);
}

/**
 * The store of demo mode: `$XDG_DATA_HOME/whereabouts`, else `~/.local/share/whereabouts`
 * (created when missing); the embedded demo database is read-only, so tokens live here.
 */
export function demoStoreDir(): string {
  const xdg = process.env.XDG_DATA_HOME;
  const base = xdg?.startsWith('/') ? xdg : join(homedir(), '.local', 'share');
  return join(base, 'whereabouts');
}

/**
 * The demo key of a store: the token named in `STORE/demo-key`, created (label `demo`, every
 * default) on the first start or when that token is gone or revoked.
 */
export function ensureDemoKey(store: string): string {
  mkdirSync(store, { recursive: true, mode: 0o700 });
  const file = join(store, 'demo-key');
  const tokens = TokenStore.open(store);
  try {
    const known = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (known !== '' && tokens.get(known)?.active) return known;
    const token = tokens.create({ label: 'demo' }).token;
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    return token;
  } finally {
    tokens.close();
  }
}

/** The demo page's address with the demo key, on standard error (the logs never carry tokens). */
function announceDemo(config: ServeConfig, url: string): void {
  if (!config.demoKey) return;
  const page = `${url}/?key=${encodeURIComponent(config.demoKey)}`;
  process.stderr.write(
    `Demo database (simulated stations around The Hague); tokens in ${config.store}.\nOpen the demo page: ${page}\n`,
  );
}

/** Runs `serve`; resolves to the exit code once the service has shut down. */
export async function runServe(argv: string[]): Promise<number> {
  const config = parseConfig(argv);
  // Whatever the service creates (tokens.sqlite, observations.sqlite, learned.sqlite, which the
  // Rust core creates, and their -wal and -shm files) is readable by its owner only.
  process.umask(0o077);
  if (cluster.isWorker) return runWorker(config);
  if (config.demo) config.demoKey = ensureDemoKey(config.store);
  if (config.workers === 0) return runSingle(config);
  return runPrimary(config);
}

// ---------------------------------------------------------------------------------------------
// Primary: forks, restarts, forwards shutdown.

function runPrimary(config: ServeConfig): Promise<number> {
  // The only process that writes charges to SQLite (src/server/ledger.ts); workers read on their
  // own. With PostgreSQL every worker charges through its own pool: the database serialises.
  const ledger = isPostgresUrl(config.tokens)
    ? undefined
    : TokenStore.open(config.store, { synchronous: config.sync, groupMs: config.groupMs });
  return new Promise((resolve) => {
    let stopping = false;
    let everListened = false;
    let announced = false;
    let exitCode = 0;
    const listening = new Set<number>();
    const startedAt = new Map<number, number>();
    let recentCrashes = 0;
    let failedStarts = 0;

    const fork = (): Worker => {
      const worker = cluster.fork();
      startedAt.set(worker.id, Date.now());
      if (ledger) serveLedger(ledger, worker as unknown as Channel);
      worker.on('message', (message: WorkerMessage) => {
        if (message?.type === 'fatal' && !everListened) {
          failedStarts += 1;
          log('error', 'worker failed to start', {
            error: message.message,
            attempt: failedStarts,
            of: START_ATTEMPTS,
          });
          // A worker that cannot open the database will never work: stop instead of looping.
          if (failedStarts >= START_ATTEMPTS) {
            exitCode = 1;
            stop();
          }
        }
      });
      // A process that could not be created (or signalled): without a listener the primary
      // would die of it; the 'exit' that follows starts another.
      worker.on('error', (err: Error) => log('error', 'worker process error', { error: err.message }));
      return worker;
    };

    const stop = () => {
      if (stopping) return;
      stopping = true;
      log('info', 'shutting down: finishing requests in flight');
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
      if (workers.length === 0) finish();
      for (const w of workers) w.process.kill('SIGTERM');
      setTimeout(() => {
        for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      }, SHUTDOWN_GRACE_MS).unref();
    };

    const finish = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      ledger?.close();
      log('info', 'stopped', { exitCode });
      resolve(exitCode);
    };

    cluster.on('listening', (worker, address) => {
      listening.add(worker.id);
      everListened = true;
      if (!announced && listening.size >= config.workers) {
        announced = true;
        const host = address.address ?? config.host;
        const shown = host.includes(':') ? `[${host}]` : host;
        log('info', 'listening', {
          url: `http://${shown}:${address.port}`,
          port: address.port,
          workers: config.workers,
        });
        announceDemo(config, `http://${shown}:${address.port}`);
      }
    });

    cluster.on('exit', (worker, code, signal) => {
      listening.delete(worker.id);
      const lived = Date.now() - (startedAt.get(worker.id) ?? 0);
      startedAt.delete(worker.id);
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) finish();
        return;
      }
      log('warn', 'worker exited; starting another', { workerPid: worker.process.pid, code, signal });
      // A worker that dies young again and again waits longer before the next try.
      recentCrashes = lived < 5_000 ? recentCrashes + 1 : 0;
      const delay = Math.min(10_000, recentCrashes === 0 ? 0 : 100 * 2 ** recentCrashes);
      setTimeout(() => {
        if (!stopping) fork();
      }, delay);
    });

    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    for (let i = 0; i < config.workers; i++) fork();
  });
}

// ---------------------------------------------------------------------------------------------
// Worker (or the single process of --workers 0).

interface Running {
  port: number;
  stop: () => Promise<void>;
}

async function startServer(config: ServeConfig): Promise<Running> {
  const postgres = isPostgresUrl(config.tokens);
  // With PostgreSQL the station database directory follows the published generations: the
  // newest is installed before the engine opens, so a server starts on the shared stations.
  let shared: SharedLearning | undefined;
  let generations: GenerationStore | undefined;
  let opened: Engine | undefined;
  if (postgres && config.engine.db !== undefined) {
    generations = await GenerationStore.open(config.tokens);
    shared = new SharedLearning({
      store: generations,
      db: config.engine.db,
      reload: () => opened?.reload(),
      intervalMs: config.learnIntervalMs,
      log: (level, msg, fields = {}) => {
        if (logged(config.logLevel, level))
          log(level, msg, { role: cluster.isWorker ? 'worker' : 'server', ...fields });
      },
    });
    await shared.follow();
  }
  let engine: Engine;
  try {
    engine = await Engine.open(config.engine);
  } catch (err) {
    await generations?.close();
    throw err;
  }
  opened = engine;
  // A learned.sqlite (stations placed by users' GPS fixes) created before the umask rule.
  if (config.engine.db !== undefined) keepPrivate(join(config.engine.db, 'learned.sqlite'));
  let tokens: TokenStorage | undefined;
  let observations: ObservationStorage | undefined;
  let maps: MapsOptions | undefined;
  try {
    maps = openMaps(config.maps);
    // the geocoding files are read on first use: a server reads them at start, so that a user's
    // first request does not wait for them (nor for the word index and the cell trees), and a
    // damaged file stops the start
    engine.prepareSearch();
    engine.prepareTimezones();
    engine.prepareReverse();
    tokens = postgres
      ? await PgTokenStore.open(config.tokens, {
          groupMs: config.groupMs,
          // One pool per worker: a few connections each keep the server's total bounded.
          poolSize: cluster.isWorker ? 4 : 10,
        })
      : TokenStore.open(config.store, { synchronous: config.sync, groupMs: config.groupMs });
    observations = postgres
      ? await PgObservationStore.open(config.tokens, { groupMs: config.groupMs })
      : ObservationStore.open(config.store, { synchronous: config.sync });
  } catch (err) {
    await tokens?.close();
    await generations?.close();
    engine.close();
    throw err;
  }
  // Under the cluster, SQLite charges and rate-limit hits go to the primary's single writer.
  const access: TokenAccess =
    cluster.isWorker && tokens instanceof TokenStore
      ? new LedgerClient(tokens, process as unknown as Channel)
      : tokens;
  if (access instanceof LedgerClient)
    process.on('disconnect', () => access.failAll('the primary process is gone'));
  // GPS submissions reach this process's engine at once; what other workers learned and
  // generations written by compaction or an external import are picked up every second. With
  // PostgreSQL they are stored for the elected compactor instead, and every server picks up
  // its published generations.
  const learner =
    config.engine.db === undefined || postgres
      ? undefined
      : new LearnBatcher((batch) => engine.learnSubmissions(batch));
  const reloads = setInterval(() => {
    try {
      engine.reload();
    } catch (err) {
      log('warn', 'reloading the station database failed', { error: (err as Error).message });
    }
  }, RELOAD_INTERVAL_MS);
  reloads.unref();
  shared?.start();
  const app = buildServer({
    engine,
    tokens: access,
    observations,
    learner,
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.requestTimeoutMs,
    maxConnections: config.maxConnections,
    healthDetail: config.healthDetail,
    maps,
  });
  await app.listen({ port: config.port, host: config.host });
  const t = tokens;
  const o = observations;
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : config.port,
    stop: async () => {
      clearInterval(reloads);
      await app.close();
      await learner?.drain();
      await shared?.close();
      await generations?.close();
      await t.close();
      await o.close();
      engine.close();
    },
  };
}

/** Waits for SIGTERM, SIGINT or (in a worker) the primary going away, then stops gracefully. */
function untilStopped(running: Running): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      running.stop().then(
        () => resolve(0),
        (err) => {
          process.stderr.write(`whereabouts: shutdown failed: ${(err as Error).message}\n`);
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    // A primary killed with SIGKILL leaves its workers without a supervisor: stop with it.
    if (cluster.isWorker) process.on('disconnect', stop);
  });
}

async function runWorker(config: ServeConfig): Promise<number> {
  let running: Running;
  try {
    running = await startServer(config);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.send?.({ type: 'fatal', message } satisfies WorkerMessage);
    // Leave the cluster so that the process ends (with the error printed), and the primary
    // starts another or gives up.
    if (cluster.worker?.isConnected()) cluster.worker.disconnect();
    throw err;
  }
  const code = await untilStopped(running);
  // Leave the cluster so that nothing keeps this process alive; a stuck handle cannot hold it.
  if (cluster.worker?.isConnected()) cluster.worker.disconnect();
  setTimeout(() => process.exit(code), 2_000).unref();
  return code;
}

async function runSingle(config: ServeConfig): Promise<number> {
  const running = await startServer(config);
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${running.port}`;
  log('info', 'listening', { url, port: running.port, workers: 0 });
  announceDemo(config, url);
  return untilStopped(running);
}
