/**
 * The client side of `GET /v2/sync`: pulls every page of stations another Whereabouts server
 * changed since the last pull, checks each, and leaves them as `.csv.gz` files for one import.
 * The wire format is in docs/sync.md; the server side is src/server/sync.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { SyncProgress } from './progress.js';
import { SyncHeader } from './wire.js';

/** Page files of a pull are named `<PAGE_PREFIX>NNNNNN.csv.gz` in the work directory. */
export const PAGE_PREFIX = 'server-page-';

/** The server's base URL for a `--from` value: `whereabouts+` dropped, no trailing slash. */
export function serverBase(from: string): string {
  return from.replace(/^whereabouts\+/i, '').replace(/\/+$/, '');
}

/** Options of {@link pullServer}. */
export interface PullOptions {
  base: string;
  token: string;
  since: number;
  /** Where the page files go. */
  dir: string;
  /** Longest a page may take, request and body; a server that hangs must not hold the sync. */
  pageTimeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (p: SyncProgress) => void;
}

/** What a pull brought: page files to import, and the server's `until`. */
export interface Pulled {
  files: string[];
  until: number;
  stations: number;
  bytes: number;
}

/** Pulls every page of changes since `since`; rejects on a refusal or a damaged page. */
export async function pullServer(options: PullOptions): Promise<Pulled> {
  const { base, token } = options;
  const files: string[] = [];
  let until: number | undefined;
  let cursor: string | undefined;
  let stations = 0;
  let bytes = 0;
  const started = Date.now();
  for (let page = 1; ; page++) {
    const q = new URLSearchParams({ since: String(options.since) });
    if (until !== undefined) q.set('until', String(until));
    if (cursor !== undefined) q.set('cursor', cursor);
    // This receiver reads learned cells' advances (a server that does not know them
    // ignores the parameter).
    q.set('advances', '1');
    q.set('token', token);
    const { res, body } = await fetchPage(`${base}/v2/sync?${q}`, base, page, options);
    bytes += body.length;
    until = Number(res.headers.get(SyncHeader.until));
    const count = Number(res.headers.get(SyncHeader.stations) ?? '0');
    if (count > 0) {
      checkPage(body, count, `${base} page ${page}`);
      const file = join(options.dir, `${PAGE_PREFIX}${String(page).padStart(6, '0')}.csv.gz`);
      writeFileSync(file, body);
      files.push(file);
      stations += count;
    }
    const secs = Math.max((Date.now() - started) / 1000, 1e-3);
    options.onProgress?.({ phase: 'download', label: base, done: bytes, total: 0, rate: bytes / secs });
    cursor = res.headers.get(SyncHeader.next) ?? undefined;
    if (cursor === undefined) return { files, until, stations, bytes };
  }
}

/** One page's response and body; rejects on a refusal, a network failure or the page timeout. */
async function fetchPage(
  url: string,
  base: string,
  page: number,
  options: PullOptions,
): Promise<{ res: Response; body: Buffer }> {
  const timeout = AbortSignal.timeout(options.pageTimeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let res: Response;
  let body: Buffer;
  try {
    res = await fetch(url, { signal });
    body = Buffer.from(await res.arrayBuffer());
  } catch (err) {
    if (options.signal?.aborted) throw err;
    if (timeout.aborted)
      throw new Error(`${base}: page ${page} took more than ${options.pageTimeoutMs / 1000} s`);
    throw new Error(`cannot reach ${base}: ${(err as Error).cause ?? (err as Error).message}`);
  }
  if (res.status !== 200 || res.headers.get(SyncHeader.until) === null) {
    throw new Error(`${base} refused the sync: ${refusal(res.status, body.toString())}`);
  }
  return { res, body };
}

/** A page must inflate whole (gzip CRC and length) to a header and `count` rows. */
function checkPage(body: Buffer, count: number, what: string): void {
  let text: Buffer;
  try {
    text = gunzipSync(body);
  } catch (err) {
    throw new Error(`${what}: damaged gzip data (${(err as Error).message})`);
  }
  let lines = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) lines++;
  if (lines !== count + 1) throw new Error(`${what}: ${lines - 1} rows where the server announced ${count}`);
}

/** The error of a refused page, as its JSON body says (spec 7.2 codes), with the HTTP status. */
function refusal(status: number, text: string): string {
  let message: string | undefined;
  try {
    message = (JSON.parse(text) as { message?: string }).message;
  } catch {
    // not JSON: not a Whereabouts server, or a proxy's page
  }
  return message === undefined
    ? `HTTP ${status} without a sync page (is it a Whereabouts server?)`
    : `${message} (HTTP ${status})`;
}
