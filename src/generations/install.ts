/**
 * A published generation into a database directory: the files it lacks are downloaded into
 * `DIR/.shared-fetch`, then the core switches the directory to it as an import does
 * (`installGeneration`: under `.import.lock`, the shards renamed in, `manifest.json` replaced by
 * rename, the old shards removed; crates/whereabouts-core/src/store/install.rs). Engines reading
 * the directory pick it up on their next `reload()` (every second in `serve`), and requests in
 * flight finish on the old mapping.
 *
 * `DIR/.shared-generation` names the publication a directory holds; a directory without it
 * (or whose learner state was changed since) is brought back to a publication whole.
 */
import { existsSync, linkSync, readFileSync, statSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { native } from '../native/binding.js';
import type { GenerationStore, Publication, PublishedFile } from './store.js';

const MARKER = '.shared-generation';
const MANIFEST = 'manifest.json';
const FETCH_DIR = '.shared-fetch';

/** A learner's state beside its shards, published with the generation it belongs to. */
export const STATE_FILES: readonly string[] = ['learned.sqlite', 'learn-blocklist.json'];

interface ManifestShards {
  generation: number;
  shards: { file: string; bytes: number }[];
  /** The generation's per-network statistics file (docs/positioning.md), if it has one. */
  network_stats?: string;
}

/** Whether `name` is a plain file name inside the directory. */
function plainName(name: unknown): name is string {
  return typeof name === 'string' && name !== '' && !/[/\\]/.test(name) && !name.startsWith('.');
}

/** A manifest's generation and shards; throws on a file name that would leave the directory. */
export function manifestShards(text: string): ManifestShards {
  const m = JSON.parse(text) as ManifestShards;
  if (!Number.isSafeInteger(m.generation) || !Array.isArray(m.shards))
    throw new Error('a published manifest without generation or shards');
  for (const s of m.shards)
    if (!plainName(s.file))
      throw new Error(`a published manifest names an odd shard file ${JSON.stringify(s.file)}`);
  if (m.network_stats !== undefined && m.network_stats !== null && !plainName(m.network_stats))
    throw new Error(`a published manifest names an odd statistics file ${JSON.stringify(m.network_stats)}`);
  return m;
}

/** The files of a generation besides its shards: its network statistics, when it has them. */
function generationExtras(m: ManifestShards): string[] {
  return typeof m.network_stats === 'string' ? [m.network_stats] : [];
}

/** The publication `dir` holds, if it holds one whole. */
export function installedPublication(dir: string): number | undefined {
  try {
    const id = Number(readFileSync(join(dir, MARKER), 'utf8').trim());
    return Number.isSafeInteger(id) && id > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Records that `dir` holds publication `id`. */
export async function markInstalled(dir: string, id: number): Promise<void> {
  await writeFile(join(dir, `${MARKER}.tmp`), `${id}\n`, { mode: 0o600 });
  await rename(join(dir, `${MARKER}.tmp`), join(dir, MARKER));
}

/** Forgets which publication `dir` holds: called before changing it, so that a crash midway is noticed. */
export async function clearInstalled(dir: string): Promise<void> {
  await rm(join(dir, MARKER), { force: true });
}

/** The local manifest of `dir`, if any. */
function localManifest(dir: string): ManifestShards | undefined {
  const file = join(dir, MANIFEST);
  return existsSync(file) ? manifestShards(readFileSync(file, 'utf8')) : undefined;
}

/** Whether `dir` already reads the shards of `wanted` (same generation, same files). */
function sameShards(dir: string, wanted: ManifestShards): boolean {
  const local = localManifest(dir);
  return (
    local !== undefined &&
    local.generation === wanted.generation &&
    local.shards.length === wanted.shards.length &&
    local.shards.every(
      (s, i) =>
        s.file === wanted.shards[i]?.file &&
        s.bytes === wanted.shards[i]?.bytes &&
        existsSync(join(dir, s.file)),
    )
  );
}

/**
 * Runs `work` holding the pid-file lock `lock` (the protocol of the core's `.import.lock`: one
 * whose process is gone is taken over); rejects while another live process holds it.
 */
export async function withLockFile<T>(lock: string, work: () => Promise<T>): Promise<T> {
  native().takeDirLock(lock);
  try {
    return await work();
  } finally {
    native().releaseDirLock(lock);
  }
}

/**
 * Brings `dir` to publication `p`: downloads what it lacks into `dir/.shared-fetch`, then under
 * the import lock renames the shards in, switches the manifest and removes the shards the old
 * manifest listed. With `state`, the learner's state files ({@link STATE_FILES}) are replaced
 * too (a round's work directory; never a directory a running engine learns in). A shard that
 * `linkFrom` holds as part of the same publication (the round's work directory, which just
 * published it) is hard-linked from there instead of downloaded. Resolves to whether the
 * manifest changed.
 */
export async function installPublication(
  store: GenerationStore,
  p: Publication,
  dir: string,
  options: { state?: boolean; linkFrom?: string } = {},
): Promise<boolean> {
  const wanted = manifestShards(p.manifest);
  await mkdir(dir, { recursive: true });
  const shardsSame = sameShards(dir, wanted);
  // Engines switch on a new generation number: the same number with other shards would never
  // be read. It means the directory was changed outside the shared store (an import).
  const local = localManifest(dir);
  const sameList =
    local !== undefined &&
    local.shards.length === wanted.shards.length &&
    local.shards.every((s, i) => s.file === wanted.shards[i]?.file && s.bytes === wanted.shards[i]?.bytes);
  if (!sameList && local?.generation === wanted.generation)
    throw new Error(
      `${dir} holds generation ${wanted.generation} with other shards than publication ${p.id}: ` +
        'it was changed outside the shared store (an import?); move its database aside and restart',
    );
  const byName = new Map(p.files.map((f) => [f.name, f]));
  const fetch: PublishedFile[] = [];
  if (!shardsSame)
    for (const s of wanted.shards) {
      const f = byName.get(s.file);
      if (!f) throw new Error(`publication ${p.id} lacks its shard ${s.file}`);
      fetch.push(f);
    }
  if (!shardsSame)
    for (const name of generationExtras(wanted)) {
      const f = byName.get(name);
      // A publication made before statistics were published: the core answers with priors.
      if (f) fetch.push(f);
    }
  const state = options.state === true ? STATE_FILES.map((name) => byName.get(name)) : [];
  for (const f of state) if (f) fetch.push(f);
  const staging = join(dir, FETCH_DIR);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const local = options.linkFrom !== undefined && installedPublication(options.linkFrom) === p.id;
    for (const f of fetch) {
      if (
        local &&
        !STATE_FILES.includes(f.name) &&
        linked(join(options.linkFrom as string, f.name), join(staging, f.name), f.bytes)
      )
        continue;
      await store.download(p, f, join(staging, f.name));
    }
    await clearInstalled(dir);
    if (options.state === true)
      for (const name of STATE_FILES) {
        for (const suffix of ['', '-wal', '-shm', '-journal'])
          await rm(join(dir, name + suffix), { force: true });
        if (byName.has(name)) await rename(join(staging, name), join(dir, name));
      }
    if (!shardsSame) native().installGeneration(dir, staging, p.manifest);
    await markInstalled(dir, p.id);
    return !shardsSame;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Hard-links `from` to `to` when it has `bytes` bytes; whether it did. */
function linked(from: string, to: string, bytes: number): boolean {
  try {
    if (statSync(from).size !== bytes) return false;
    linkSync(from, to);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes `dir` a copy of the database in `source` (its manifest and shards, hard-linked where
 * the filesystem allows: shards are never changed in place) with no learner state: the start
 * of the first publication. A source without a database gives an empty directory.
 */
export async function seedFrom(source: string, dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  // No database yet: the first publication is made from nothing (a learn run creates one).
  if (!existsSync(join(source, MANIFEST))) return;
  const text = readFileSync(join(source, MANIFEST), 'utf8');
  const staging = join(dir, FETCH_DIR);
  await mkdir(staging);
  try {
    const m = manifestShards(text);
    for (const file of [...m.shards.map((s) => s.file), ...generationExtras(m)]) {
      if (!existsSync(join(source, file))) continue;
      try {
        linkSync(join(source, file), join(staging, file));
      } catch {
        await copyFile(join(source, file), join(staging, file));
      }
    }
    native().installGeneration(dir, staging, text);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * The files a round publishes from `dir`: its shards and its learner state as found. SQLite
 * state is published as a consistent copy (`VACUUM INTO` a file in `scratch`), never the live
 * file with its write-ahead log beside it.
 */
export async function publishedFiles(
  dir: string,
  scratch: string,
): Promise<{ name: string; path: string }[]> {
  const m = manifestShards(readFileSync(join(dir, MANIFEST), 'utf8'));
  const present = new Set(await readdir(dir));
  const files = m.shards.map((s) => ({ name: s.file, path: join(dir, s.file) }));
  for (const name of generationExtras(m)) if (present.has(name)) files.push({ name, path: join(dir, name) });
  await rm(scratch, { recursive: true, force: true });
  await mkdir(scratch, { recursive: true });
  for (const name of STATE_FILES) {
    if (!present.has(name)) continue;
    if (!name.endsWith('.sqlite')) {
      files.push({ name, path: join(dir, name) });
      continue;
    }
    const copy = join(scratch, name);
    const db = new Database(join(dir, name), { readonly: true });
    try {
      db.prepare('VACUUM INTO ?').run(copy);
    } finally {
      db.close();
    }
    files.push({ name, path: copy });
  }
  return files;
}
