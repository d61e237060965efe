/**
 * Worlds of the project's simulator (crates/whereabouts-sim; docs/simulator.md) to evaluate on:
 * `DIR/world` holds what the simulator wrote (stations, scenario requests with their truth) and
 * `DIR/db` its stations imported. Needs a checkout with cargo: the simulator is not shipped in
 * the npm package.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../data-files.js';
import { Engine } from '../engine.js';
import { native } from '../native/binding.js';

/** The simulator's scenario time (its default --now, 2026-06-01): station ages are relative to it. */
export const SIM_NOW = Date.UTC(2026, 5, 1) / 1000;

export interface SimWorld {
  work: string;
  world: string;
  db: string;
  /** The scenario files, sorted: labelled requests. */
  scenarios: string[];
}

/**
 * The world of `seed` with `requests` requests a scenario in `work`, written and imported
 * afresh, or, with `reuse`, the one already there while this build still opens its database (a
 * station format change makes it rebuild rather than fail) and the simulator's sources are those
 * it was written by (`DIR/simulator.sha256`); the same world is imported again when the core's
 * sources differ from those that imported it (`DIR/importer.sha256`: the import's statistics
 * are the core's). `separateMasts`: the simulator's
 * `--separate-masts` share; `family`: a member of the world family (`--family`, every model
 * parameter drawn from the seed; docs/simulator.md).
 */
export async function simWorld(
  work: string,
  seed: string,
  requests: string,
  reuse: boolean,
  separateMasts = '0',
  family = false,
): Promise<SimWorld> {
  const w = { work, world: join(work, 'world'), db: join(work, 'db') };
  const done = () => ({
    ...w,
    scenarios: readdirSync(join(w.world, 'scenarios'))
      .filter((f) => f.endsWith('.jsonl'))
      .sort()
      .map((f) => join(w.world, 'scenarios', f)),
  });
  const stamp = join(work, 'simulator.sha256');
  const version = simulatorVersion();
  const dbStamp = join(work, 'importer.sha256');
  const importerHash = importerVersion();
  const worldKept = reuse && existsSync(stamp) && readFileSync(stamp, 'utf8') === version;
  if (
    worldKept &&
    existsSync(join(w.db, 'manifest.json')) &&
    existsSync(dbStamp) &&
    readFileSync(dbStamp, 'utf8') === importerHash &&
    (await opensInThisBuild(w.db))
  )
    return done();
  if (worldKept) {
    // The same world, imported by other core sources (the statistics it writes may differ).
    rmSync(w.db, { recursive: true, force: true });
  } else {
    rmSync(work, { recursive: true, force: true });
    const world = ['world', '--seed', seed, '--requests', requests];
    if (Number(separateMasts) > 0) world.push('--separate-masts', separateMasts);
    if (family) world.push('--family');
    runSimulator([...world, '--out', w.world]);
  }
  const importFiles = native().importFiles;
  if (!importFiles)
    throw new Error('this build of the native addon has no importer; run `npm run build:native`');
  await importFiles(
    w.db,
    [join(w.world, 'cells.csv'), join(w.world, 'wifi.csv')],
    { replace: true, simulated: true },
    () => {},
  );
  writeFileSync(stamp, version);
  writeFileSync(dbStamp, importerHash);
  return done();
}

/**
 * The walks through the world of `seed` (`whereabouts-sim walks`: phones logging their serving
 * cell along the streets, one OpenCelliD measurement CSV a walk) in `work`, written afresh
 * unless those already there were written by the same simulator sources. Returns the walk
 * files, sorted (in time order).
 */
export function simWalks(work: string, seed: string, family: boolean): string[] {
  const walks = join(work, 'walks');
  const done = () =>
    readdirSync(walks)
      .filter((f) => f.endsWith('.csv'))
      .sort()
      .map((f) => join(walks, f));
  const stamp = join(work, 'simulator.sha256');
  const version = simulatorVersion();
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === version && existsSync(walks)) return done();
  rmSync(work, { recursive: true, force: true });
  runSimulator(['walks', '--seed', seed, ...(family ? ['--family'] : []), '--out', work]);
  writeFileSync(stamp, version);
  return done();
}

/** The simulator's crate, or the error that says a checkout is needed. */
function simulatorCrate(): string {
  const crate = join(packageRoot, 'crates', 'whereabouts-sim');
  if (!existsSync(crate))
    throw new Error(
      'the simulator needs a checkout of the whereabouts repository (crates/whereabouts-sim) and cargo',
    );
  return crate;
}

/** Runs `whereabouts-sim ARGS` from the checkout: its output discarded, its errors shown. */
function runSimulator(args: string[]): void {
  simulatorCrate();
  execFileSync('cargo', ['run', '-q', '--release', '-p', 'whereabouts-sim', '--', ...args], {
    cwd: packageRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/**
 * A hash of the core's sources, which import a world: its database is imported again when they
 * change.
 */
export function importerVersion(): string {
  return sourcesVersion(join(packageRoot, 'crates', 'whereabouts-core'));
}

/** A hash of the simulator's sources: a world written by other sources is written again. */
function simulatorVersion(): string {
  return sourcesVersion(simulatorCrate());
}

const versions = new Map<string, string>();

/**
 * A hash of a crate's `Cargo.toml` and every file under its `src/`, by path and content. Read
 * once a process per crate: every world of a bench asks.
 */
function sourcesVersion(crate: string): string {
  const known = versions.get(crate);
  if (known !== undefined) return known;
  const h = createHash('sha256');
  const files = [
    join(crate, 'Cargo.toml'),
    ...(readdirSync(join(crate, 'src'), { recursive: true }) as string[])
      .map((f) => join(crate, 'src', f))
      .filter((f) => statSync(f).isFile())
      .sort(),
  ];
  for (const f of files) h.update(f.slice(crate.length)).update(readFileSync(f));
  const version = h.digest('hex');
  versions.set(crate, version);
  return version;
}

async function opensInThisBuild(db: string): Promise<boolean> {
  try {
    (await Engine.open({ db })).close();
    return true;
  } catch (e) {
    if (/format version/.test(String(e))) return false;
    throw e;
  }
}
