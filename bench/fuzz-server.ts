/**
 * Bounded fuzzing of `whereabouts serve` over raw TCP: broken JSON, huge and deeply nested
 * bodies, wrong types, odd and conflicting headers, bad tokens, odd methods and paths, random
 * bytes with and without HTTP framing.
 *
 *   npx tsx bench/fuzz-server.ts [--cases N] [--seconds S] [--seed N] [--workers N]
 *
 * Asserts that no worker ever exits (the primary logs every restart) and that every response
 * that has a body is JSON with a string `status` (HEAD, 204 and 304 have no body). A case the
 * server does not answer within a second (a body shorter than its Content-Length) is counted,
 * not failed: the server is waiting for the rest, as it should. Exit code 1 on any violation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TokenStore } from '../src/tokens/index.js';
import { requestMix, startServe } from './load.js';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '3000' },
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string', default: '1' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '16' },
  },
});
const maxCases = Math.min(100_000, Math.max(1, Number(values.cases)));
const deadline = Date.now() + Math.min(600, Math.max(1, Number(values.seconds))) * 1000;

// A small deterministic PRNG (xorshift32): the same seed replays the same cases.
let state = Number(values.seed) >>> 0 || 1;
function rand(): number {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 2 ** 32;
}
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));

const mix = requestMix(undefined, 500);
const store = mkdtempSync(join(tmpdir(), 'wb-fuzz-'));
const seedStore = TokenStore.open(store);
const token = seedStore.create({ label: 'fuzz', geolocationPerDay: 1_000_000 }).token;
const gpsToken = seedStore.create({ label: 'fuzz-gps', gps: true, slots: 3 }).token;
const limited = seedStore.create({ label: 'fuzz-limited', perSecond: 2, referrers: ['*example.com*'] }).token;
seedStore.close();

const WEIRD: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1e308,
  -1e308,
  2 ** 53 + 1,
  0.5,
  '',
  ' ',
  '0',
  '01',
  'gsm',
  'ﬀ\u0000',
  '\ud800',
  'x'.repeat(5000),
  [],
  [null],
  [[[]]],
  {},
  { a: { b: { c: 1 } } },
  Array.from({ length: 50 }, () => ({ cid: 1 })),
];
const FIELDS = [
  'token',
  'id',
  'radio',
  'mcc',
  'mnc',
  'cells',
  'wifi',
  'ip',
  'gps',
  'gps_sandbox',
  'geolocation',
  'address',
  'accept-language',
  'fallbacks',
  'bt',
  'metadata',
  '__proto__',
  'constructor',
];

function weirdValue(depth = 0): unknown {
  if (depth < 2 && rand() < 0.2) return Array.from({ length: int(8) }, () => weirdValue(depth + 1));
  if (depth < 2 && rand() < 0.2) return Object.fromEntries([[pick(FIELDS), weirdValue(depth + 1)]]);
  return pick(WEIRD);
}

/** A body for /process: a real request bent in one or more ways. */
function processBody(): string {
  const base = { ...(pick(mix.bodies) as Record<string, unknown>) };
  base.token = pick([token, token, gpsToken, limited, 'bad', '', 'x'.repeat(10_000), 12, null, [token]]);
  const kind = int(12);
  if (kind === 0) return JSON.stringify(base).slice(0, int(JSON.stringify(base).length));
  if (kind === 1) {
    const b = Buffer.from(JSON.stringify(base));
    for (let i = 0; i < 1 + int(5); i++) b[int(b.length)] = int(256);
    return b.toString('latin1');
  }
  if (kind === 2) {
    for (let i = 0; i < 1 + int(4); i++) base[pick(FIELDS)] = weirdValue();
    return JSON.stringify(base);
  }
  if (kind === 3) {
    const cells = Array.isArray(base.cells) ? (base.cells as Record<string, unknown>[]) : [{}];
    base.cells = cells.map((c) => ({
      ...c,
      [pick(['cid', 'lac', 'mcc', 'mnc', 'radio', 'signal', 'ta'])]: weirdValue(),
    }));
    return JSON.stringify(base);
  }
  if (kind === 4) {
    base.gps = Array.from({ length: int(4) }, () => ({
      lat: pick([52.1, 91, -91, '52', null, Number.POSITIVE_INFINITY]),
      lon: pick([4.3, 181, Number.NaN, '4']),
      heading: pick([0, 360, 361, -1, undefined]),
      timestamp: pick([Date.now(), -5, 1.5, 'now', undefined]),
      accuracy: pick([5, -1, 0, undefined]),
    }));
    base.gps_sandbox = pick([0, 1, 2, '0', true]);
    base.metadata = pick([0, 1, 2]);
    return JSON.stringify(base);
  }
  if (kind === 5) return `{"token":"${token}","mcc":0${int(999)},"cells":[]}`;
  if (kind === 6) {
    const depth = 1000 + int(100_000);
    return `${'['.repeat(depth)}${']'.repeat(depth)}`;
  }
  if (kind === 7) return `\ufeff${JSON.stringify(base)}`;
  if (kind === 8) return JSON.stringify(base).replace(/"/g, pick(["'", '', '\\"']));
  if (kind === 9) return randomBytes(int(2000)).toString('latin1');
  if (kind === 10) return pick(['', 'null', '0', '"x"', '[]', 'true', '{}', '{"token":{}}', '1e999']);
  return JSON.stringify(base);
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  ';;;',
  '',
  'application/json\u0001',
  '*/*',
  'x'.repeat(3000),
];

/** A whole HTTP request (or something that is not one), as bytes. */
function makeCase(): { name: string; bytes: Buffer } {
  const kind = int(20);
  if (kind === 0) return { name: 'random bytes', bytes: randomBytes(1 + int(4096)) };
  if (kind === 1) {
    const size = 600 * 1024 + int(2 * 1024 * 1024);
    const body = `{"token":"${token}","pad":"${'x'.repeat(size)}"}`;
    return {
      name: 'huge body',
      bytes: http('POST', '/v2/process', body, { 'content-type': 'application/json' }),
    };
  }
  if (kind === 2) {
    const path = pick([
      `/v2/balance?token=${encodeURIComponent(pick([token, gpsToken, 'x', '']))}`,
      '/v2/balance.php?token[]=a&token[]=b',
      '/v2/balance?token=%ff%fe',
      `/v2/balance?token=${token}&token=bad`,
      '/v2/balance',
      `/v2/balance?token=${'%'.repeat(50)}`,
      '/health',
      '/health?x=1',
      '/v2/process',
      '/v2/nothing',
      `/${'a'.repeat(6000)}`,
      '/v2/../v2/balance?token=x',
      '/%zz',
      '*',
    ]);
    const method = pick(['GET', 'GET', 'HEAD', 'DELETE', 'PUT', 'OPTIONS', 'PATCH', 'BREW', 'TRACE']);
    return { name: `${method} ${path.slice(0, 40)}`, bytes: http(method, path, '', {}) };
  }
  if (kind === 3) {
    // Conflicting framing: chunked with broken chunks, or both Transfer-Encoding and Content-Length.
    const body = processBody();
    const chunked = `${(body.length + int(3) - 1).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const head = [
      'POST /v2/process HTTP/1.1',
      'Host: 127.0.0.1',
      'Transfer-Encoding: chunked',
      ...(rand() < 0.3 ? [`Content-Length: ${body.length}`] : []),
      'Connection: close',
    ];
    return { name: 'chunked', bytes: Buffer.from(`${head.join('\r\n')}\r\n\r\n${chunked}`, 'latin1') };
  }
  if (kind === 4) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const odd = int(6);
    if (odd === 0) headers['x-long'] = 'y'.repeat(20_000 + int(50_000));
    if (odd === 1) for (let i = 0; i < 200; i++) headers[`x-h${i}`] = String(i);
    if (odd === 2) headers.referer = pick(['https://example.com/', '\u00ff\u00fe', 'x'.repeat(9000), '']);
    if (odd === 3) headers['x-forwarded-for'] = pick(['1.2.3.4', 'garbage', '::1, 10.0.0.1', '']);
    if (odd === 4) headers['x-request-id'] = pick(['abc', 'x'.repeat(5000), '"quoted"']);
    if (odd === 5) headers.origin = pick(['https://a.example', 'null', '*']);
    return { name: 'odd headers', bytes: http('POST', '/v2/process.php', processBody(), headers) };
  }
  if (kind === 5) {
    const body = processBody();
    // A Content-Length that lies: shorter (the rest is a second, broken request) or longer.
    const length = Math.max(0, Buffer.byteLength(body, 'latin1') + pick([-5, -1, 1, 10, 0]));
    const head = `POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;
    return { name: 'lying content-length', bytes: Buffer.from(head + body, 'latin1') };
  }
  if (kind === 6) {
    return {
      name: 'HTTP/1.0',
      bytes: Buffer.from(`POST /v2/process HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}`),
    };
  }
  if (kind === 7) {
    return {
      name: 'bad request line',
      bytes: Buffer.from(
        pick([
          'GET\r\n\r\n',
          'POST / HTTP/9.9\r\n\r\n',
          ' / HTTP/1.1\r\n\r\n',
          'GET / HTTP/1.1\r\nHost\r\n\r\n',
        ]),
      ),
    };
  }
  const type = pick(CONTENT_TYPES);
  return {
    name: `process (${type.slice(0, 30)})`,
    bytes: http(
      'POST',
      pick(['/v2/process', '/v2/process.php']),
      processBody(),
      type === '' ? {} : { 'content-type': type },
    ),
  };
}

function http(method: string, path: string, body: string, headers: Record<string, string>): Buffer {
  const payload = Buffer.from(body, 'latin1');
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== '' || method === 'POST') lines.push(`Content-Length: ${payload.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

interface Outcome {
  status?: number;
  violation?: string;
  noAnswer?: boolean;
}

/** Sends the bytes, reads the first response, and checks it. */
function send(port: number, bytes: Buffer, method: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ port, host: '127.0.0.1' });
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(check(Buffer.concat(chunks), method));
    };
    const timer = setTimeout(finish, 1000);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(bytes, () => {});
  });
}

function check(raw: Buffer, method: string): Outcome {
  if (raw.length === 0) return { noAnswer: true };
  const text = raw.toString('latin1');
  const head = text.indexOf('\r\n\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (!m || head < 0) return { violation: `not an HTTP response: ${JSON.stringify(text.slice(0, 80))}` };
  const status = Number(m[1]);
  const headers = text.slice(0, head).toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(headers);
  if (method === 'HEAD' || status === 204 || status === 304) return { status };
  if (!length) return { status, violation: `status ${status} without Content-Length` };
  const body = raw.subarray(head + 4, head + 4 + Number(length[1])).toString('utf8');
  if (!/\r\ncontent-type: *application\/json/.test(headers)) {
    return { status, violation: `status ${status} not JSON: ${body.slice(0, 80)}` };
  }
  try {
    const json = JSON.parse(body) as { status?: unknown };
    if (typeof json.status !== 'string') return { status, violation: `no status: ${body.slice(0, 80)}` };
  } catch {
    return { status, violation: `bad JSON: ${body.slice(0, 80)}` };
  }
  return { status };
}

let restarts = 0;
const served = await startServe(
  ['--db', mix.db, '--store', store, '--workers', values.workers, '--log-level', 'warn'],
  {
    onLine: (line) => {
      if (line.includes('worker exited')) {
        restarts++;
        console.error(`worker crash: ${line}`);
      }
    },
  },
);

const statuses = new Map<number, number>();
const violations: string[] = [];
let cases = 0;
let noAnswer = 0;
const started = Date.now();
const worker = async () => {
  while (cases < maxCases && Date.now() < deadline) {
    cases++;
    const c = makeCase();
    const method = c.bytes.subarray(0, 5).toString('latin1').split(' ')[0] ?? '';
    const o = await send(served.port, c.bytes, method);
    if (o.noAnswer) noAnswer++;
    if (o.status !== undefined) statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
    if (o.violation && violations.length < 50) violations.push(`${c.name}: ${o.violation}`);
  }
};
await Promise.all(Array.from({ length: Math.max(1, Number(values.concurrency)) }, worker));

// The service still answers normally afterwards.
const after = (await (
  await fetch(`${served.url}/v2/process`, {
    method: 'POST',
    body: JSON.stringify({ ...(mix.bodies[0] as object), token }),
  })
).json()) as { status: string };
served.child.kill('SIGTERM');
const exit = await served.exited;

console.log(
  JSON.stringify(
    {
      cases,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      httpStatuses: Object.fromEntries([...statuses.entries()].sort((a, b) => a[0] - b[0])),
      noAnswerWithin1s: noAnswer,
      workerRestarts: restarts,
      violations: violations.length,
      afterwards: after.status,
      serverExit: exit,
    },
    null,
    2,
  ),
);
for (const v of violations) console.log(`violation: ${v}`);
const ok = restarts === 0 && violations.length === 0 && exit.code === 0;
console.log(ok ? 'fuzz: no crash, every answer JSON with a status' : 'fuzz: FAILED');
rmSync(store, { recursive: true, force: true });
process.exitCode = ok ? 0 : 1;
