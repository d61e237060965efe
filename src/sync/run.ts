/**
 * One sync of a station database from one source: an OpenCelliD/MLS export (a URL or a file)
 * or another Whereabouts server's `GET /v2/sync`. Whatever arrives is verified, then imported
 * through the ordinary importer as one new generation (merged into the database by sample
 * weight, switched in atomically), and recorded in `sync-state.json`. Rules: docs/sync.md.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { type NativeImportProgress, native } from '../native/binding.js';
import { discardPart, download, expectedSha256, finishPart, verifyFile } from './download.js';
import type { SyncProgress } from './progress.js';
import { PAGE_PREFIX, pullServer, serverBase } from './remote.js';
import { readSyncState, type SourceState, writeSourceState } from './state.js';

/** The work directory inside the database directory: part files, pages, the lock. */
export const SYNC_DIR = '.sync';

/** Options of {@link syncDatabase}. */
export interface SyncOptions {
  /** The station database directory (created by the first sync when missing). */
  db: string;
  /**
   * An export (`http(s)://…/cells.csv.gz`, a file path or `file://` URL), or a Whereabouts
   * server: `whereabouts+http(s)://host:port`, or an `http(s)://host:port` URL with no path.
   */
  from: string;
  /** Access token with scope `sync`, for a Whereabouts server. */
  token?: string;
  /** Expected SHA-256 (hex) of an export; else the `URL.sha256` sidecar when the server has one. */
  sha256?: string;
  /** Download attempts within one run; default 3. */
  attempts?: number;
  /**
   * A download that receives nothing for this long (ms) is cut and resumed, and a page of a
   * Whereabouts server that takes five times as long fails the sync; default 60,000.
   */
  stallMs?: number;
  signal?: AbortSignal;
  onProgress?: (p: SyncProgress) => void;
}

/** What one sync did. */
export interface SyncOutcome {
  source: 'export' | 'server';
  /** False when there was nothing new: no generation was written. */
  changed: boolean;
  /** The generation written, when `changed`. */
  generation?: number;
  /** Stations accepted by the import (0 when unchanged). */
  stations: number;
  /** Learned site masts accepted (a Whereabouts server's `masts` pages; docs/sync.md). */
  masts: number;
  /**
   * Learned cells' positions by level (and by advance) accepted, one a cell (`levels` pages;
   * docs/sync.md).
   */
  levels: number;
  /** Rows the importer rejected (with line numbers in `badLines`). */
  rejected: number;
  badLines: { file: string; line: number; reason: string }[];
  /** Bytes downloaded in this run. */
  bytes: number;
  seconds: number;
}

/** Which kind of source a `--from` value names. */
export function sourceKind(from: string): 'export' | 'server' {
  if (/^whereabouts\+https?:\/\//i.test(from)) return 'server';
  if (/^https?:\/\//i.test(from)) {
    const path = new URL(from).pathname;
    return path === '' || path === '/' ? 'server' : 'export';
  }
  return 'export';
}

/** Runs one sync; rejects with a clear message, leaving the database as it was. */
export async function syncDatabase(options: SyncOptions): Promise<SyncOutcome> {
  const started = Date.now();
  const work = join(options.db, SYNC_DIR);
  mkdirSync(work, { recursive: true });
  const release = takeLock(work);
  try {
    const partial =
      sourceKind(options.from) === 'server'
        ? await syncServer(options, work)
        : await syncExport(options, work);
    return { ...partial, seconds: (Date.now() - started) / 1000 };
  } finally {
    release();
  }
}

type Partial = Omit<SyncOutcome, 'seconds'>;

const unchanged = (source: SyncOutcome['source'], bytes: number): Partial => ({
  source,
  changed: false,
  stations: 0,
  masts: 0,
  levels: 0,
  rejected: 0,
  badLines: [],
  bytes,
});

async function syncExport(options: SyncOptions, work: string): Promise<Partial> {
  const { db, from } = options;
  const applied = readSyncState(db).sources[from];
  const now = new Date().toISOString();
  const remote = /^https?:\/\//i.test(from);
  const sha256 = await expectedSha256(from, options.sha256, options.signal);
  let file: string;
  let bytes = 0;
  let digest: string;
  let validators: { etag?: string; lastModified?: string };
  if (remote) {
    file = join(work, fileNameFor(from));
    const got = await download({
      url: from,
      file,
      attempts: options.attempts,
      stallMs: options.stallMs,
      applied: applied?.sha256 ? { etag: applied.etag, lastModified: applied.lastModified } : undefined,
      signal: options.signal,
      onProgress: options.onProgress,
    });
    if (got.status === 'unchanged') {
      writeSourceState(db, from, { ...(applied as SourceState), checkedAt: now });
      return unchanged('export', 0);
    }
    bytes = got.bytes;
    validators = { etag: got.etag, lastModified: got.lastModified };
    try {
      digest = await verifyFile(`${file}.part`, sha256);
    } catch (err) {
      discardPart(file);
      throw err;
    }
    finishPart(file);
  } else {
    file = from.startsWith('file://') ? new URL(from).pathname : from;
    if (!existsSync(file)) throw new Error(`no such file: ${file}`);
    const st = statSync(file);
    validators = { etag: `${st.size}-${Math.floor(st.mtimeMs)}` };
    if (applied !== undefined && applied.etag === validators.etag) {
      writeSourceState(db, from, { ...applied, checkedAt: now });
      return unchanged('export', 0);
    }
    digest = await verifyFile(file, sha256);
  }
  try {
    if (applied?.sha256 === digest) {
      writeSourceState(db, from, { ...(applied as SourceState), ...validators, checkedAt: now });
      return unchanged('export', bytes);
    }
    const imported = await importInto(db, [file], options.onProgress);
    writeSourceState(db, from, {
      kind: 'export',
      ...validators,
      sha256: digest,
      bytes: statSync(file).size,
      appliedAt: now,
      checkedAt: now,
      stations: imported.stations,
      rejected: imported.rejected,
      generation: imported.generation,
    });
    return { source: 'export', changed: true, bytes, ...imported };
  } finally {
    if (remote) rmSync(file, { force: true });
  }
}

async function syncServer(options: SyncOptions, work: string): Promise<Partial> {
  const { db } = options;
  const key = serverBase(options.from);
  const applied = readSyncState(db).sources[key];
  const now = new Date().toISOString();
  if (!options.token)
    throw new Error(`syncing from the Whereabouts server ${key} needs a token with scope "sync"`);
  // Pages of a pull that died before its import: this pull starts over from `since` anyway.
  for (const f of readdirSync(work)) if (f.startsWith(PAGE_PREFIX)) rmSync(join(work, f), { force: true });
  const pulled = await pullServer({
    base: key,
    token: options.token,
    since: applied?.until ?? 0,
    dir: work,
    pageTimeoutMs: 5 * (options.stallMs ?? 60_000),
    signal: options.signal,
    onProgress: options.onProgress,
  });
  try {
    const base: SourceState = {
      kind: 'server',
      until: pulled.until,
      checkedAt: now,
      appliedAt: applied?.appliedAt,
      stations: applied?.stations ?? 0,
      rejected: applied?.rejected ?? 0,
      generation: applied?.generation,
    };
    if (pulled.files.length === 0) {
      writeSourceState(db, key, base);
      return unchanged('server', pulled.bytes);
    }
    const imported = await importInto(db, pulled.files, options.onProgress);
    writeSourceState(db, key, {
      ...base,
      appliedAt: now,
      stations: imported.stations,
      rejected: imported.rejected,
      generation: imported.generation,
    });
    return { source: 'server', changed: true, bytes: pulled.bytes, ...imported };
  } finally {
    for (const f of pulled.files) rmSync(f, { force: true });
  }
}

/** Imports verified files through the native importer (merging); one new generation. */
async function importInto(
  db: string,
  files: string[],
  onProgress?: (p: SyncProgress) => void,
): Promise<{
  stations: number;
  masts: number;
  levels: number;
  rejected: number;
  generation: number;
  badLines: SyncOutcome['badLines'];
}> {
  const importFiles = native().importFiles;
  if (!importFiles) throw new Error('this build of the native addon has no importer');
  const started = Date.now();
  const report = (await importFiles(db, files, {}, (p: NativeImportProgress) =>
    onProgress?.({
      phase: 'import',
      label: p.file,
      done: p.rows,
      total: 0,
      rate: p.rows / Math.max((Date.now() - started) / 1000, 1e-3),
    }),
  )) as {
    files: {
      file: string;
      kind: string;
      accepted: number;
      rejected: number;
      badLines: { line: number; reason: string }[];
    }[];
  };
  const manifest = JSON.parse(readFileSync(join(db, 'manifest.json'), 'utf8')) as { generation: number };
  return {
    stations: report.files.reduce((s, f) => s + (LEARNED_KINDS.includes(f.kind) ? 0 : f.accepted), 0),
    masts: report.files.reduce((s, f) => s + (f.kind === 'MastCsv' ? f.accepted : 0), 0),
    levels: report.files.reduce((s, f) => s + (f.kind === 'LevelsCsv' ? f.accepted : 0), 0),
    rejected: report.files.reduce((s, f) => s + f.rejected, 0),
    generation: manifest.generation,
    badLines: report.files.flatMap((f) =>
      f.badLines.map((b) => ({ file: basename(f.file), line: b.line, reason: b.reason })),
    ),
  };
}

/** The importer's kinds of the learned files a server's pages carry besides stations. */
const LEARNED_KINDS = ['MastCsv', 'LevelsCsv'];

/** A part-file name for an export URL: its own name, plus a hash so two URLs never share one. */
function fileNameFor(url: string): string {
  const name = basename(new URL(url).pathname).replace(/[^A-Za-z0-9._-]/g, '_') || 'export';
  const tag = createHash('sha256').update(url).digest('hex').slice(0, 8);
  return `${tag}-${name}`;
}

/**
 * Takes `.sync/lock` for this process: two syncs of one directory would share part files.
 * A lock left by a process that no longer runs is taken over.
 */
function takeLock(work: string): () => void {
  const path = join(work, 'lock');
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(path, 'utf8'));
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new Error(`another sync (process ${pid}) is running on ${work}`);
      }
      if (pid === process.pid) throw new Error(`a sync of ${work} is already running in this process`);
      rmSync(path, { force: true });
    }
  }
  throw new Error(`cannot take the sync lock ${path}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
