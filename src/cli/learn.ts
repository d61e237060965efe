/**
 * `whereabouts learn`: learns station positions from GPS-tagged observation files
 * (OpenCelliD measurements, G-NetTrack exports and logs, WiGLE CSV) into a database directory.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  type Calibration,
  formatShares,
  type LearnCalibrationPlan,
  learnCalibrated,
  learnCalibrationPlan,
} from '../calibration/radius.js';
import { Engine } from '../engine.js';
import { STATIONS_ONLY } from '../engine-options.js';
import { GenerationStore, installPublication, updateShared, workDirOf } from '../generations/index.js';
import { type NativeBinding, native } from '../native/binding.js';
import { tokenHash } from '../observations/index.js';
import { isPostgresUrl, maskToken, openTokenStorage, STORE_URL_ENV } from '../tokens/index.js';
import { progressReporter, writeFileOutcomes } from './report.js';
import { networkFlags, parseFlags, UsageError } from './usage.js';

/** The native learner (`learnFiles` of the binding). */
export function nativeLearn(): NativeBinding['learnFiles'] {
  return native().learnFiles;
}

/**
 * The hash a TOKEN argument stands for: a token (43 base64url characters) is hashed as the
 * server hashes it; 16 or 64 hex digits are taken as its key or its hash.
 */
export function tokenArgument(text: string): string {
  if (/^[0-9a-f]{16}$|^[0-9a-f]{64}$/i.test(text)) return text.toLowerCase();
  return tokenHash(text);
}

/** One token's key (the start of its hash) and, when the token store knows it, its name. */
interface TokenName {
  label?: string;
  masked: string;
}

/** The names of the tokens in `store`: a directory holding tokens.sqlite, or a PostgreSQL URL. */
async function tokenNames(store: string): Promise<Map<string, TokenName>> {
  const names = new Map<string, TokenName>();
  if (!isPostgresUrl(store) && !existsSync(join(store, 'tokens.sqlite')))
    throw new Error(`no tokens.sqlite in ${store}`);
  const tokens = await openTokenStorage(store, { sqlite: { cacheMs: 0 } });
  try {
    for (const t of await tokens.list()) {
      const name: TokenName = { masked: maskToken(t.token) };
      if (t.label !== undefined) name.label = t.label;
      names.set(tokenHash(t.token).slice(0, 16), name);
    }
  } finally {
    await tokens.close();
  }
  return names;
}

/** Deletes the rows a token submitted from an observations.sqlite; how many there were. */
function dropObservations(file: string, hash: string): number {
  if (!existsSync(file)) throw new Error(`no such file: ${file}`);
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    const where = hash.length === 64 ? 'token_hash = ?' : 'substr(token_hash, 1, 16) = ?';
    return db.prepare(`DELETE FROM observations WHERE ${where}`).run(hash).changes;
  } finally {
    db.close();
  }
}

/** `--contributions`, `--revert-token`, `--quarantine-token`, `--release-token`: JSON on stdout. */
async function runLedger(values: Record<string, string | boolean | undefined>, db: string): Promise<number> {
  const fns = native();
  const str = (name: string) => values[name] as string | undefined;
  const out = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  const revert = str('revert-token');
  const quarantine = str('quarantine-token');
  const release = str('release-token');
  const chosen = [values.contributions === true, revert, quarantine, release].filter(
    (v) => v !== undefined && v !== false,
  );
  if (chosen.length > 1)
    throw new UsageError('give one of --contributions, --revert-token, --quarantine-token, --release-token');
  const shared = str('store') ?? process.env[STORE_URL_ENV];
  if (shared !== undefined && isPostgresUrl(shared))
    return runSharedLedger(values, db, shared, { revert, quarantine, release });
  if (revert !== undefined) {
    const hash = tokenArgument(revert);
    const report = JSON.parse(fns.revertLearnedToken(db, hash)) as Record<string, unknown>;
    const observations = str('observations');
    if (observations !== undefined) report.observationsDeleted = dropObservations(observations, hash);
    out(report);
    return 0;
  }
  if (quarantine !== undefined || release !== undefined) {
    const hash = tokenArgument((quarantine ?? release) as string);
    fns.quarantineLearnedToken(db, hash, quarantine !== undefined);
    out({ token: hash.slice(0, 16), quarantined: quarantine !== undefined });
    return 0;
  }
  const token = str('token');
  const list = JSON.parse(
    fns.learnedContributions(db, token === undefined ? null : tokenArgument(token)),
  ) as {
    token: string;
  }[];
  // The token store only names the tokens: --store, else the servers' WHEREABOUTS_STORE_URL.
  const store = str('store') ?? process.env[STORE_URL_ENV];
  const names = store === undefined || store === '' ? undefined : await tokenNames(store);
  out(list.map((c) => ({ ...c, ...(names?.get(c.token) ?? {}) })));
  return 0;
}

/**
 * The ledger actions against the shared store (docs/deploy.md, "Learning across servers"): the
 * ledger is the newest publication's. A list reads it in a temporary directory; a revert
 * deletes the token's stored submissions, takes its part out and publishes the folded result;
 * a quarantine or release publishes the changed ledger. Tokens are named from the store's.
 */
async function runSharedLedger(
  values: Record<string, string | boolean | undefined>,
  db: string,
  url: string,
  action: { revert?: string | undefined; quarantine?: string | undefined; release?: string | undefined },
): Promise<number> {
  const fns = native();
  const out = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  if (values.observations !== undefined)
    throw new UsageError(
      "--observations names an observations.sqlite; the shared store's are deleted with --revert-token",
    );
  const generations = await GenerationStore.open(url);
  try {
    const options = {
      store: generations,
      seed: db,
      work: workDirOf(db),
      publisher: `learn ${hostname()} pid ${process.pid}`,
    };
    if (action.revert !== undefined) {
      const hash = tokenArgument(action.revert);
      const deleted = await generations.deleteSubmissions(hash);
      const outcome = await updateShared(options, async (work, cursor) => {
        const report = JSON.parse(fns.revertLearnedToken(work, hash)) as Record<string, unknown>;
        await foldIn(work);
        return { cursor, observations: 0, detail: report };
      });
      if (outcome.published)
        await installPublication(generations, outcome.published, db, { linkFrom: workDirOf(db) });
      out({ ...outcome.detail, observationsDeleted: deleted, publication: outcome.published?.id ?? null });
      return 0;
    }
    if (action.quarantine !== undefined || action.release !== undefined) {
      const hash = tokenArgument((action.quarantine ?? action.release) as string);
      const on = action.quarantine !== undefined;
      const outcome = await updateShared(options, async (work, cursor) => {
        fns.quarantineLearnedToken(work, hash, on);
        return { cursor, observations: 0, detail: undefined };
      });
      out({ token: hash.slice(0, 16), quarantined: on, publication: outcome.published?.id ?? null });
      return 0;
    }
    const latest = await generations.latest();
    if (latest === undefined) {
      out([]);
      return 0;
    }
    const scratch = mkdtempSync(join(tmpdir(), 'whereabouts-ledger-'));
    try {
      await installPublication(generations, latest, scratch, { state: true, linkFrom: workDirOf(db) });
      const token = values.token as string | undefined;
      const list = JSON.parse(
        fns.learnedContributions(scratch, token === undefined ? null : tokenArgument(token)),
      ) as { token: string }[];
      const names = await tokenNames(url);
      out(list.map((c) => ({ ...c, ...(names.get(c.token) ?? {}) })));
      return 0;
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  } finally {
    await generations.close();
  }
}

/** Folds the work directory's overlay into a new generation (the core's compaction). */
async function foldIn(work: string): Promise<void> {
  const engine = await Engine.open({ db: work, ...STATIONS_ONLY });
  try {
    await engine.compact();
  } finally {
    engine.close();
  }
}

type LearnReport = Awaited<ReturnType<NativeBinding['learnFiles']>>;

/**
 * Learns files into the shared store's newest generation (built in DIR's work directory) and
 * publishes it; the servers switch to it within a second, and DIR is brought to it too. When
 * a server's round publishes first, the files are learned again on that one (standard input
 * cannot be read twice: then the run fails and says so).
 */
async function learnShared(
  db: string,
  url: string,
  files: string[],
  options: Parameters<NativeBinding['learnFiles']>[2],
  onProgress: Parameters<NativeBinding['learnFiles']>[3],
): Promise<LearnReport> {
  const generations = await GenerationStore.open(url);
  try {
    const outcome = await updateShared<LearnReport>(
      {
        store: generations,
        seed: db,
        work: workDirOf(db),
        publisher: `learn ${hostname()} pid ${process.pid}`,
        attempts: files.includes('-') ? 1 : 3,
      },
      async (work, cursor) => ({
        cursor,
        observations: 0,
        detail: await nativeLearn()(work, files, options, onProgress),
      }),
    );
    const report = outcome.detail as LearnReport;
    if (outcome.published)
      await installPublication(generations, outcome.published, db, { linkFrom: workDirOf(db) });
    process.stderr.write(
      `published generation ${outcome.published?.generation} (publication ${outcome.published?.id}) to the shared store\n`,
    );
    return report;
  } finally {
    await generations.close();
  }
}

export async function runLearn(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    mcc: { type: 'string' },
    mnc: { type: 'string' },
    'block-days': { type: 'string' },
    quiet: { type: 'boolean' },
    contributions: { type: 'boolean' },
    token: { type: 'string' },
    store: { type: 'string' },
    'revert-token': { type: 'string' },
    observations: { type: 'string' },
    'quarantine-token': { type: 'string' },
    'release-token': { type: 'string' },
    'no-calibrate': { type: 'boolean' },
  });
  if (!values.db) throw new UsageError('learn needs --db DIR');
  if (values.store !== undefined && !isPostgresUrl(values.store) && !values.contributions)
    throw new UsageError(
      '--store DIR (a token store directory) names the tokens of --contributions only; the other actions take a postgres:// URL (the shared store)',
    );
  if (
    values.contributions ||
    values['revert-token'] !== undefined ||
    values['quarantine-token'] !== undefined ||
    values['release-token'] !== undefined
  ) {
    if (positionals.length > 0) throw new UsageError('no FILE with --contributions or a token action');
    return runLedger(values, values.db);
  }
  if (positionals.length === 0) throw new UsageError('learn needs at least one FILE');
  const { mcc, mnc } = networkFlags(values);
  let blockDays: number | undefined;
  if (values['block-days'] !== undefined) {
    blockDays = Number(values['block-days']);
    if (!Number.isFinite(blockDays) || blockDays < 0)
      throw new UsageError('--block-days must be a number >= 0');
  }
  for (const f of positionals) if (f !== '-' && !existsSync(f)) throw new Error(`no such file: ${f}`);

  const net = { mcc, mnc };
  const learnOptions = { mcc, mnc, blockDays };
  const shared = values.store ?? process.env[STORE_URL_ENV];
  if (values.store !== undefined && !isPostgresUrl(values.store))
    throw new UsageError('learn FILE... --store takes a postgres:// URL (the shared store)');
  const toShared = shared !== undefined && isPostgresUrl(shared);
  // learn's own calibration (docs/positioning.md, "Calibration"): a third of the requests
  // held out of a first run into a scratch copy, the radius model fitted on them, and the
  // files learned whole into --db.
  // Not into the shared store: a publication carries stations, and each server's radius
  // model stays its operator's (calibrate its --db).
  let plan: LearnCalibrationPlan | string = '--no-calibrate';
  if (toShared) plan = "not with the shared store (run calibrate on a server's --db)";
  else if (!values['no-calibrate']) {
    const bytes = positionals.reduce((sum, f) => sum + (f === '-' ? 0 : statSync(f).size), 0);
    plan = await learnCalibrationPlan(positionals, net, bytes);
  }
  const progress = progressReporter(Boolean(values.quiet));
  let report: Awaited<ReturnType<ReturnType<typeof nativeLearn>>>;
  let calibration: Calibration | string | undefined;
  if (toShared) {
    report = await learnShared(values.db, shared, positionals, learnOptions, progress.onProgress);
    progress.done();
  } else if (typeof plan === 'string') {
    report = await nativeLearn()(values.db, positionals, learnOptions, progress.onProgress);
    progress.done();
  } else {
    ({ report, calibration } = await learnCalibrated(
      values.db,
      positionals,
      learnOptions,
      plan,
      progress.onProgress,
    ));
    progress.done();
  }
  const learned = report.counts;
  const n = (x: number) => x.toLocaleString('en');
  writeFileOutcomes(
    report.files.map((f) => ({ ...f, kind: f.format })),
    'skipped (not WiFi, or _nomap)',
  );
  process.stderr.write(
    `learned from ${n(learned.observations)} observations (${n(learned.outliers)} dropped as inconsistent): ` +
      `${n(learned.added)} stations added, ${n(learned.refined)} refined, ${n(learned.moved)} moved, ` +
      `${n(learned.relearned)} re-learned after a move, ${n(learned.blocked)} withdrawn (blocklisted)` +
      (learned.capped > 0 ? `, ${n(learned.capped)} submitted sightings over their token's cap` : '') +
      '\n' +
      `database ${values.db}: ${n(report.cells)} cells, ${n(report.wifi)} WiFi APs, ` +
      (report.masts > 0 ? `${n(report.masts)} site masts from timing advances, ` : '') +
      (report.levels > 0 ? `${n(report.levels)} cells placed by level, ` : '') +
      (report.advances > 0 ? `${n(report.advances)} by timing advance, ` : '') +
      `${report.shards} shard(s), ` +
      `${(report.bytes / 1e6).toFixed(1)} MB, ${learned.seconds.toFixed(1)} s\n`,
  );
  if (typeof plan === 'string') {
    if (!values['no-calibrate']) process.stderr.write(`radius not calibrated: ${plan}\n`);
  } else if (typeof calibration === 'string') process.stderr.write(`radius not calibrated: ${calibration}\n`);
  else if (calibration !== undefined) {
    process.stderr.write(
      `radius calibrated on a held-out third of the requests (${n(calibration.rowsLocated)} located by a first ` +
        `run without them, into a scratch copy), inside shares on its own held-out part before and after:\n${formatShares(calibration)}\n` +
        `radius model stored in ${join(values.db, calibration.file ?? '')} (--no-calibrate: leave the radii alone)\n`,
    );
  }
  return 0;
}
