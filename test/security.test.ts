/**
 * Security hardening of the HTTP service (docs/security.md): proxies and the caller's address,
 * request deadlines and the connection cap, tokens kept out of logs, bounded work before
 * authentication, request ids, health detail, the shutdown answer, private database files
 * and the token CLI's safer forms. Real sockets on loopback.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GeoMessage } from '../src/errors.js';
import { ObservationStore } from '../src/observations/index.js';
import { ServerMessage } from '../src/server/auth.js';
import { TokenStore } from '../src/tokens/index.js';
import {
  cli,
  fixtureCell,
  fixtureDb,
  leakedTokens,
  type ServeProcess,
  startServe,
  startTestServer,
  type TestServer,
} from './helpers.js';
import { tempDir } from './temp-dirs.js';

let db: string;

beforeAll(() => {
  db = fixtureDb();
});

/** Opens a raw connection to `port` on loopback. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Resolves when `socket` closes: the ms it stayed open since `since` and what it received. */
function closed(socket: Socket, since: number): Promise<{ ms: number; received: string }> {
  let received = '';
  socket.on('data', (d) => {
    received += d.toString('latin1');
  });
  socket.on('error', () => {});
  return new Promise((resolve) => {
    socket.on('close', () => resolve({ ms: Date.now() - since, received }));
  });
}

/** Sends `body` to /v2/process one byte every `everyMs` and resolves when the server closes the connection. */
async function trickle(
  port: number,
  body: string,
  everyMs: number,
): Promise<{ ms: number; received: string }> {
  const s = await open(port);
  const done = closed(s, Date.now());
  s.write(`POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`);
  let i = 0;
  const timer = setInterval(() => {
    if (!s.destroyed && i < body.length) s.write(body[i++] as string);
  }, everyMs);
  try {
    return await done;
  } finally {
    clearInterval(timer);
  }
}

const portOf = (server: TestServer) => Number(new URL(server.base).port);

/** The `ip` of the request log line for `path` (the last one). */
function loggedIp(server: TestServer, path: string): string | undefined {
  const lines = server.logs
    .map((l) => JSON.parse(l) as { msg?: string; url?: string; ip?: string })
    .filter((l) => l.msg === 'request' && l.url?.startsWith(path));
  return lines.at(-1)?.ip;
}

describe('the caller behind proxies (--trust-proxy)', () => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });
  const start = async (trustProxy: string | number | boolean) => {
    const s = await startTestServer({ engine: { db }, tokens: { cacheMs: 0 }, server: { trustProxy } });
    servers.push(s);
    return s;
  };
  /** /v2/balance with a token restricted to 10.0.0.0/8, as sent through `xff`: the status and the logged caller. */
  const balanceVia = async (s: TestServer, xff: string | undefined, tag: string) => {
    const token = s.tokens.create({ ips: ['10.0.0.0/8'] }).token;
    const r = await s.get(
      `/v2/balance?token=${token}&tag=${tag}`,
      xff === undefined ? {} : { 'x-forwarded-for': xff },
    );
    return { status: r.status, ip: loggedIp(s, `/v2/balance?token=${token.slice(0, 4)}`) };
  };

  it('takes the rightmost address that is not a trusted proxy, never a client-written one', async () => {
    for (const trust of ['127.0.0.1', 'loopback', true, 1] as const) {
      const s = await start(trust);
      // The client at 8.8.8.8 wrote 10.1.2.3; the proxy on loopback appended 8.8.8.8.
      expect(await balanceVia(s, '10.1.2.3, 8.8.8.8', 'spoof'), String(trust)).toEqual({
        status: 403,
        ip: '8.8.8.8',
      });
      expect(await balanceVia(s, '8.8.8.8, 10.1.2.3', 'inside'), String(trust)).toEqual({
        status: 200,
        ip: '10.1.2.3',
      });
    }
  });

  it('walks past several trusted proxies, and only past them', async () => {
    const s = await start('127.0.0.1,192.0.2.0/24');
    expect(await balanceVia(s, '10.1.2.3, 192.0.2.7', 'two-hops')).toEqual({ status: 200, ip: '10.1.2.3' });
    expect(await balanceVia(s, '10.1.2.3, 198.51.100.1, 192.0.2.7', 'untrusted-between')).toEqual({
      status: 403,
      ip: '198.51.100.1',
    });
  });

  it('ignores malformed forwarded addresses: never the caller, never logged as one', async () => {
    const s = await start('127.0.0.1');
    expect(await balanceVia(s, 'notanip', 'garbage')).toEqual({ status: 403, ip: '127.0.0.1' });
    // A garbled entry stops the walk: the client-written 10.1.2.3 beyond it is not taken either.
    expect(await balanceVia(s, '10.1.2.3, notanip', 'garbage-right')).toEqual({
      status: 403,
      ip: '127.0.0.1',
    });
    expect(await balanceVia(s, '10.1.2.3, 10.0.0.300', 'bad-octet')).toEqual({
      status: 403,
      ip: '127.0.0.1',
    });
    expect(s.logs.some((l) => l.includes('notanip') || l.includes('10.0.0.300'))).toBe(false);
  });

  it('does not believe X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const s = await start('10.0.0.0/8');
    expect(await balanceVia(s, '10.1.2.3', 'direct')).toEqual({ status: 403, ip: '127.0.0.1' });
  });

  it('ignores X-Forwarded-For without --trust-proxy', async () => {
    const s = await start(false);
    expect(await balanceVia(s, '10.1.2.3', 'off')).toEqual({ status: 403, ip: '127.0.0.1' });
  });
});

describe('request deadlines and the connection cap', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ engine: { db }, server: { requestTimeoutMs: 1000, maxConnections: 4 } });
  });
  afterAll(() => server?.close());

  it('closes a connection that trickles its body, with HTTP 408, within the configured deadline', async () => {
    const token = server.tokens.create({}).token;
    const body = JSON.stringify({ token, cells: [fixtureCell(1)] });
    const { ms, received } = await trickle(portOf(server), body, 50);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeLessThan(2000);
    expect(server.tokens.balance(token, 'geolocation')).toBe(10_000);
  });

  it('closes a connection that stalls inside its headers, or sends nothing', async () => {
    const stalled = await open(portOf(server));
    const silent = await open(portOf(server));
    const start = Date.now();
    const a = closed(stalled, start);
    const b = closed(silent, start);
    stalled.write('GET /health HTTP/1.1\r\nHost: x\r\n');
    for (const { ms } of await Promise.all([a, b])) expect(ms).toBeLessThan(2000);
  });

  it('closes connections beyond the cap at once, and accepts again when one goes', async () => {
    const held = await Promise.all(Array.from({ length: 4 }, () => open(portOf(server))));
    // Let the server accept all four before the fifth arrives.
    await new Promise((r) => setTimeout(r, 50));
    const extra = await open(portOf(server));
    const { ms, received } = await closed(extra, Date.now());
    expect(received).toBe('');
    expect(ms).toBeLessThan(500);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect((await server.get('/health')).body).toEqual({ status: 'ok' });
  });
});

describe('tokens never reach the log', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ engine: { db }, tokens: { cacheMs: 0 } });
  });
  afterAll(() => server?.close());

  it('finds the token parameter by its decoded, case-sensitive name and logs no token in any spelling', async () => {
    const token = server.tokens.create({}).token;
    const everyCharEncoded = [...token].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    // %74 is "t": the decoded name is `token`, the token parameter.
    expect((await server.get(`/v2/balance?%74oken=${token}`)).body.status).toBe('ok');
    await new Promise((r) => setTimeout(r, 1000));
    expect((await server.get(`/v2/balance?token=${everyCharEncoded}`)).body.status).toBe('ok');
    // Names are case-sensitive: `Token` is not the token parameter.
    expect((await server.get(`/v2/balance?Token=${token}`)).body).toEqual({
      status: 'error',
      message: 'INVALID_TOKEN',
    });
    await server.get(`/v2/balance?token=${token.toLowerCase()}`);
    await server.get(`/v2/search?q=${token}&limit=1`);
    await server.get(`/v2/balance/${token}`);
    await server.get(`/v2/balance/${everyCharEncoded}?${token}`);
    await server.get(`/v2/balance?token=%zz${token}`);
    await server.get(`/%zz/${token}`);
    const r = await fetch(`${server.base}/health`, { headers: { 'x-request-id': token } });
    expect(r.headers.get('x-request-id')).not.toBe(token);
    // Every request but the undecodable URL's (answered before routing) has its line.
    expect(server.logs.filter((l) => l.includes('"msg":"request"')).length).toBeGreaterThanOrEqual(9);
    expect(leakedTokens(server.logs, [token])).toEqual([]);
  });

  it('the log check itself finds a token as is, percent-encoded or in another case', () => {
    const token = 'Qx3vAbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-A';
    const encoded = [...token].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    for (const line of [
      token,
      encodeURIComponent(token),
      encoded,
      token.toUpperCase(),
      `{"url":"/x?t=${encoded}"}`,
    ]) {
      expect(leakedTokens([line], [token])).toEqual([line]);
    }
    expect(leakedTokens([`/x?token=${token.slice(0, 4)}%E2%80%A6`], [token])).toEqual([]);
  });
});

describe('work before authentication', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ engine: { db }, tokens: { cacheMs: 0 } });
  });
  afterAll(() => server?.close());

  /** A body of `size` bytes: deeply nested arrays after an optional token. */
  const nested = (token: string | undefined, size = 500 * 1024) => {
    const head = token === undefined ? '{"x":' : `{"token":"${token}","x":`;
    const depth = Math.floor((size - head.length - 1) / 2);
    return `${head}${'['.repeat(depth)}${']'.repeat(depth)}}`;
  };
  const wide = (token: string) => `{"token":"${token}","x":[${Array(100_000).fill('[]').join(',')}]}`;

  const post = async (body: string) => {
    const res = await fetch(`${server.base}/v2/process`, { method: 'POST', body });
    return (await res.json()) as Record<string, unknown>;
  };

  it('refuses deep or huge bodies before JSON.parse builds them, authentication answered first', async () => {
    const token = server.tokens.create({ geolocationPerDay: 5 }).token;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect(await post(nested(undefined))).toEqual({
        status: 'error',
        message: GeoMessage.invalidRequest,
        balance: 0,
      });
      expect(await post(nested('no-such-token'))).toEqual({
        status: 'error',
        message: GeoMessage.invalidToken,
        balance: 0,
      });
      expect(await post(nested(token))).toEqual({
        status: 'error',
        message: GeoMessage.invalidRequest,
        balance: 5,
      });
      expect(await post(wide(token))).toEqual({
        status: 'error',
        message: GeoMessage.invalidRequest,
        balance: 5,
      });
      const bigParses = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 10_000);
      expect(bigParses).toEqual([]);
    } finally {
      parse.mockRestore();
    }
    // A valid request of the largest kind (1000 GPS fixes) stays within the limits.
    const fix = {
      source: 'gps',
      lat: 52.5,
      lon: 13.4,
      accuracy: 5,
      altitude: 30,
      altitude_accuracy: 3,
      speed: 1,
      heading: 90,
      timestamp: 1_700_000_000_000,
    };
    const gpsToken = server.tokens.create({ gps: true }).token;
    const big = { token: gpsToken, cells: [fixtureCell(1)], gps: Array(1000).fill(fix), address: 0 };
    expect(await post(JSON.stringify(big))).toMatchObject({ status: 'ok' });
  });

  it('GET routes refuse an unknown token before reading anything else', async () => {
    const search = vi.spyOn(server.engine, 'search');
    const reverse = vi.spyOn(server.engine, 'reverse');
    try {
      expect((await server.get('/v2/search?token=nope&q=berlin')).body.message).toBe('INVALID_TOKEN');
      expect((await server.get('/v2/reverse?token=nope&lat=1&lon=1')).body.message).toBe('INVALID_TOKEN');
      expect(search).not.toHaveBeenCalled();
      expect(reverse).not.toHaveBeenCalled();
    } finally {
      search.mockRestore();
      reverse.mockRestore();
    }
  });
});

describe('request ids, health, shutdown', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ engine: { db } });
  });
  afterAll(() => server?.close());

  it('echoes a short plain X-Request-Id and replaces any other', async () => {
    const idOf = async (id: string) =>
      (await fetch(`${server.base}/health`, { headers: { 'x-request-id': id } })).headers.get('x-request-id');
    expect(await idOf('abc-123.X_9')).toBe('abc-123.X_9');
    expect(await idOf('550e8400-e29b-41d4-a716-446655440000')).toBe('550e8400-e29b-41d4-a716-446655440000');
    for (const bad of ['x'.repeat(41), 'a b', 'a"b', '{"level":60}', 'ä']) {
      const id = await idOf(encodeURIComponent(bad) === bad ? bad : bad.replace(/[^\x20-\x7e]/g, '?'));
      expect(id).toMatch(/^[0-9a-z]+-[0-9a-z]+$/);
    }
    expect(server.logs.some((l) => l.includes('x'.repeat(41)))).toBe(false);
  });

  it('says only {status} on /health unless detail is enabled', async () => {
    expect(await server.get('/health')).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('answers a request arriving during shutdown with 503 in its route’s error shape', async () => {
    const own = await startTestServer({ engine: { db } });
    const token = own.tokens.create({}).token;
    const body = JSON.stringify({ token, cells: [fixtureCell(1)], address: 0 });
    const s = await open(portOf(own));
    const done = closed(s, Date.now());
    // The first request is in flight (half its body sent) when the server starts closing; the
    // second arrives on the same connection after that.
    const half = Math.floor(body.length / 2);
    s.write(
      `POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, half)}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    const closing = own.close();
    await new Promise((r) => setTimeout(r, 100));
    s.write(
      `${body.slice(half)}POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    const { received } = await done;
    await closing;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
    const json = (answers[1] as string).slice((answers[1] as string).indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(json)).toEqual({ status: 'error', message: ServerMessage.unknownError, balance: 0 });
  });
});

describe('private files', () => {
  it('creates observations.sqlite 0600 and tightens an existing tokens.sqlite', () => {
    const dir = tempDir('wb-private-');
    writeFileSync(join(dir, 'tokens.sqlite'), '');
    chmodSync(join(dir, 'tokens.sqlite'), 0o644);
    TokenStore.open(dir).close();
    ObservationStore.open(dir).close();
    for (const f of ['tokens.sqlite', 'observations.sqlite']) {
      expect((statSync(join(dir, f)).mode & 0o777).toString(8), f).toBe('600');
    }
  });
});

describe('whereabouts serve, hardened', () => {
  let serve: ServeProcess | undefined;
  afterAll(() => {
    if (serve && serve.child.exitCode === null) serve.child.kill('SIGKILL');
  });

  it('takes a bare --trust-proxy as loopback, applies --request-timeout, and keeps learned.sqlite private', async () => {
    const own = fixtureDb();
    const created = cli(['token', 'create', '--db', own, '--gps', '--ip', '10.0.0.0/8']);
    const token = (JSON.parse(created.stdout) as { token: string }).token;
    serve = await startServe(['--db', own, '--workers', '0', '--trust-proxy', '--request-timeout', '1000']);
    const base = `http://127.0.0.1:${serve.port}`;
    const balance = (xff: string) =>
      fetch(`${base}/v2/balance?token=${token}`, { headers: { 'x-forwarded-for': xff } }).then(
        (r) => r.status,
      );
    expect(await balance('10.1.2.3, 8.8.8.8')).toBe(403);
    expect(await balance('8.8.8.8, 10.1.2.3')).toBe(200);
    const body = JSON.stringify({ token, cells: [fixtureCell(1)] });
    const { ms, received } = await trickle(serve.port, body, 50);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeLessThan(2000);
    // A GPS submission makes the core create learned.sqlite: under the service's umask, 0600.
    const fix = { lat: 52.5, lon: 13.4, accuracy: 5 };
    const submit = await fetch(`${base}/v2/process`, {
      method: 'POST',
      headers: { 'x-forwarded-for': '10.1.2.3' },
      body: JSON.stringify({ token, cells: [fixtureCell(1)], gps: [fix], gps_sandbox: 0 }),
    });
    expect(((await submit.json()) as { status: string }).status).toBe('ok');
    const learned = join(own, 'learned.sqlite');
    for (let i = 0; i < 50 && !existsSync(learned); i++) await new Promise((r) => setTimeout(r, 100));
    for (const f of ['learned.sqlite', 'tokens.sqlite', 'observations.sqlite']) {
      expect((statSync(join(own, f)).mode & 0o777).toString(8), f).toBe('600');
    }
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  });

  it('refuses a --trust-proxy that is not a hop count or addresses', () => {
    const r = cli(['serve', '--db', db, '--trust-proxy', '10.0.0.0/33']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/trust-proxy/);
  });
});

describe('whereabouts token update/revoke without the token on the command line', () => {
  it('reads the token from standard input (-) or WHEREABOUTS_TOKEN', () => {
    const dir = tempDir('wb-token-stdin-');
    const created = cli(['token', 'create', '--db', dir]);
    const token = (JSON.parse(created.stdout) as { token: string }).token;
    const bin = join(import.meta.dirname, '..', 'bin', 'whereabouts.js');
    const viaStdin = spawnSync(
      process.execPath,
      [bin, 'token', 'update', '-', '--db', dir, '--label', 'piped'],
      {
        input: `${token}\n`,
        encoding: 'utf8',
      },
    );
    expect(viaStdin.status).toBe(0);
    expect(viaStdin.stdout).not.toContain(token);
    const viaEnv = spawnSync(process.execPath, [bin, 'token', 'revoke', '--db', dir], {
      env: { ...process.env, WHEREABOUTS_TOKEN: token },
      encoding: 'utf8',
    });
    expect(viaEnv.status).toBe(0);
    const store = TokenStore.open(dir, { cacheMs: 0 });
    try {
      expect(store.get(token)).toMatchObject({ label: 'piped', active: false });
    } finally {
      store.close();
    }
    const none = spawnSync(process.execPath, [bin, 'token', 'revoke', '--db', dir], {
      env: { ...process.env, WHEREABOUTS_TOKEN: '' },
      encoding: 'utf8',
    });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('WHEREABOUTS_TOKEN');
  });
});
