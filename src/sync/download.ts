/**
 * Resumable, verified downloads of export files: `<name>.part` grows across attempts and runs
 * (`Range` + `If-Range` on the validator the server gave), and only a file whose length,
 * gzip CRC and SHA-256 (when known) check out leaves the `.part` name. Rules: docs/sync.md.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  createWriteStream,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { SyncProgress } from './progress.js';

/** A failure that another attempt can mend (a cut connection, a 5xx): the part file is kept. */
export class RetryableError extends Error {}

/** What the `.part.json` beside a part file remembers of the response it came from. */
interface PartMeta {
  url: string;
  etag?: string;
  lastModified?: string;
  /** Full length of the file, when the server said. */
  total?: number;
}

/** Options of {@link download}. */
export interface DownloadOptions {
  url: string;
  /** The file to produce; `<file>.part` and `<file>.part.json` are its work in progress. */
  file: string;
  /** Attempts within this call (a cut connection is resumed at once); default 3. */
  attempts?: number;
  /** Validators of the copy already applied: a 304 answer means nothing to do. */
  applied?: { etag?: string; lastModified?: string };
  signal?: AbortSignal;
  onProgress?: (p: SyncProgress) => void;
  /** Pause between attempts in ms; default 500. */
  retryDelayMs?: number;
  /** An attempt that receives nothing for this long (ms) is cut and retried; default 60,000. */
  stallMs?: number;
}

/** The outcome of {@link download}. */
export type DownloadResult =
  | { status: 'unchanged' }
  | { status: 'done'; bytes: number; etag?: string; lastModified?: string };

/** HTTP statuses worth another attempt. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

function readMeta(path: string): PartMeta | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as PartMeta;
  } catch {
    return undefined;
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** `bytes START-END/TOTAL` → start and total (total undefined for `*`). */
function parseContentRange(header: string | null): { start: number; total?: number } | undefined {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header?.trim() ?? '');
  if (!m) return undefined;
  return { start: Number(m[1]), total: m[2] === '*' ? undefined : Number(m[2]) };
}

/**
 * Downloads `url` to `file`, resuming a part file left by an earlier attempt or run. Resolves
 * once the whole body is on disk and its length matches what the server announced; the caller
 * verifies the content ({@link verifyFile}) before it renames or uses it.
 */
export async function download(options: DownloadOptions): Promise<DownloadResult> {
  const attempts = Math.max(1, options.attempts ?? 3);
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return await attemptDownload(options);
    } catch (err) {
      if (!(err instanceof RetryableError) || options.signal?.aborted) throw err;
      lastError = err;
      if (attempt < attempts)
        await new Promise((r) => setTimeout(r, (options.retryDelayMs ?? 500) * attempt));
    }
  }
  throw lastError as Error;
}

async function attemptDownload(options: DownloadOptions): Promise<DownloadResult> {
  const { url, file } = options;
  const part = `${file}.part`;
  const metaPath = `${part}.json`;
  const meta = readMeta(metaPath);
  const have = sizeOf(part);
  const validator = meta?.etag ?? meta?.lastModified;
  const resuming = meta?.url === url && validator !== undefined && have > 0;
  const headers: Record<string, string> = { 'accept-encoding': 'identity' };
  if (resuming) {
    headers.range = `bytes=${have}-`;
    headers['if-range'] = validator;
  } else if (options.applied?.etag) {
    headers['if-none-match'] = options.applied.etag;
  } else if (options.applied?.lastModified) {
    headers['if-modified-since'] = options.applied.lastModified;
  }
  // A server that stops sending without closing would hold the sync forever.
  const stallMs = options.stallMs ?? 60_000;
  const stall = new AbortController();
  let timer = setTimeout(() => stall.abort(), stallMs);
  const poke = () => {
    clearTimeout(timer);
    timer = setTimeout(() => stall.abort(), stallMs);
  };
  const signal = options.signal ? AbortSignal.any([options.signal, stall.signal]) : stall.signal;
  try {
    return await receive(options, { part, metaPath, have, resuming, headers, signal, poke });
  } catch (err) {
    if (stall.signal.aborted && !options.signal?.aborted) {
      throw new RetryableError(
        `${url}: nothing received for ${stallMs / 1000} s; the download resumes from ${sizeOf(part)} bytes`,
      );
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The request and the body of one attempt. */
async function receive(
  options: DownloadOptions,
  a: {
    part: string;
    metaPath: string;
    have: number;
    resuming: boolean;
    headers: Record<string, string>;
    signal: AbortSignal;
    poke: () => void;
  },
): Promise<DownloadResult> {
  const { url } = options;
  const { part, metaPath, have, resuming, headers, signal, poke } = a;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal, redirect: 'follow' });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new RetryableError(`cannot reach ${url}: ${(err as Error).cause ?? (err as Error).message}`);
  }
  if (res.status === 304 && !resuming) {
    await res.body?.cancel();
    return { status: 'unchanged' };
  }
  if (res.status === 416 && resuming) {
    // The part is longer than the file now is: the file changed without a new validator.
    await res.body?.cancel();
    rmSync(part, { force: true });
    rmSync(metaPath, { force: true });
    throw new RetryableError(`${url}: the server refused to resume; starting again`);
  }
  if (res.status !== 200 && res.status !== 206) {
    await res.body?.cancel();
    const msg = `${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    throw retryableStatus(res.status) ? new RetryableError(msg) : new Error(msg);
  }
  let offset = 0;
  let total: number | undefined;
  if (res.status === 206) {
    const range = parseContentRange(res.headers.get('content-range'));
    if (!resuming || range === undefined || range.start !== have) {
      await res.body?.cancel();
      rmSync(part, { force: true });
      rmSync(metaPath, { force: true });
      throw new RetryableError(
        `${url}: the server answered a range that does not continue the part; starting again`,
      );
    }
    offset = have;
    total = range.total;
  } else {
    // 200: a first request, a server that ignores Range, or an If-Range whose validator no
    // longer matches (the file changed): in every case the body is the whole file.
    const length = res.headers.get('content-length');
    total = length === null ? undefined : Number(length);
  }
  const next: PartMeta = {
    url,
    etag: res.headers.get('etag') ?? undefined,
    lastModified: res.headers.get('last-modified') ?? undefined,
    total,
  };
  writeFileSync(metaPath, JSON.stringify(next));
  if (!res.body) throw new RetryableError(`${url}: empty response`);

  const started = Date.now();
  let received = 0;
  let lastReport = 0;
  const report = (force: boolean) => {
    const now = Date.now();
    if (!options.onProgress || (!force && now - lastReport < 200)) return;
    lastReport = now;
    const secs = Math.max((now - started) / 1000, 1e-3);
    const rate = received / secs;
    const done = offset + received;
    options.onProgress({
      phase: 'download',
      label: url,
      done,
      total: total ?? 0,
      rate,
      etaSeconds: total !== undefined && rate > 0 ? Math.max(0, (total - done) / rate) : undefined,
    });
  };
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      poke();
      report(false);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(res.body, counter, createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' }));
  } catch (err) {
    if (signal.aborted) throw err;
    throw new RetryableError(
      `${url}: the connection broke after ${sizeOf(part)} bytes; the download resumes from there`,
    );
  }
  report(true);
  const size = sizeOf(part);
  if (total !== undefined && size !== total) {
    if (size > total) {
      rmSync(part, { force: true });
      rmSync(metaPath, { force: true });
    }
    throw new RetryableError(`${url}: got ${size} of ${total} bytes`);
  }
  return { status: 'done', bytes: size, etag: next.etag, lastModified: next.lastModified };
}

/** Moves a verified part file to its final name and forgets its metadata. */
export function finishPart(file: string): void {
  renameSync(`${file}.part`, file);
  rmSync(`${file}.part.json`, { force: true });
}

/** Deletes a part file that failed verification: resuming it could never succeed. */
export function discardPart(file: string): void {
  rmSync(`${file}.part`, { force: true });
  rmSync(`${file}.part.json`, { force: true });
}

/**
 * Checks a file's content: a gzip file (by its magic bytes) must inflate to its end with a
 * matching CRC and length, so a truncated `.gz` fails; with `sha256`, the hex digest must match.
 * Resolves to the file's SHA-256; rejects with what is wrong.
 */
export async function verifyFile(path: string, sha256?: string): Promise<string> {
  const hash = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      cb(null, chunk);
    },
  });
  const drain = async (source: AsyncIterable<Buffer>) => {
    for await (const _ of source) {
      // reading to the end is the check
    }
  };
  // One pass over the file: hashed as read, inflated when it is gzip.
  if (isGzip(path)) {
    try {
      await pipeline(createReadStream(path), hashing, createGunzip(), drain);
    } catch (err) {
      throw new Error(`${path}: damaged gzip data (${(err as Error).message})`);
    }
  } else {
    await pipeline(createReadStream(path), hashing, drain);
  }
  const digest = hash.digest('hex');
  if (sha256 !== undefined && digest !== sha256.toLowerCase()) {
    throw new Error(`${path}: SHA-256 is ${digest}, expected ${sha256.toLowerCase()}`);
  }
  return digest;
}

function isGzip(path: string): boolean {
  const head = Buffer.alloc(2);
  const fd = openSync(path, 'r');
  try {
    return readSync(fd, head, 0, 2, 0) === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/**
 * The expected SHA-256 of an export: `--sha256` when given, else the `URL.sha256` sidecar
 * (`sha256sum` format: the first 64 hex digits) when the server has one; undefined otherwise.
 */
export async function expectedSha256(
  url: string,
  given?: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (given !== undefined) {
    if (!/^[0-9a-fA-F]{64}$/.test(given)) throw new Error(`--sha256 must be 64 hex digits, got "${given}"`);
    return given.toLowerCase();
  }
  let text: string | undefined;
  if (/^https?:\/\//.test(url)) {
    try {
      const res = await fetch(`${url}.sha256`, { signal });
      if (res.ok) text = await res.text();
      else await res.body?.cancel();
    } catch {
      // no sidecar reachable: nothing to check against
    }
  } else if (existsSync(`${url}.sha256`)) {
    text = readFileSync(`${url}.sha256`, 'utf8');
  }
  const m = text === undefined ? null : /\b([0-9a-fA-F]{64})\b/.exec(text);
  return m ? (m[1] as string).toLowerCase() : undefined;
}
