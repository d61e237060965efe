/**
 * The remote fallback (src/remote) against real servers on loopback: a second Whereabouts
 * server with its own database plays the remote; plain node:http servers play the ones that
 * fail, hang or talk garbage. Nothing leaves the machine.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, type RemoteObservation, type RemoteOptions } from '../src/index.js';
import type { LocateRequest } from '../src/locating/request/index.js';
import { TokenStore } from '../src/tokens/index.js';
import { cli, fixtureDb, startServe, startTestServer, type TestServer } from './helpers.js';
import { tempDir } from './temp-dirs.js';

const NOW = 1_700_000_000;
const HEADER = 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal';

/**
 * The remote's stations: 262/1/50/50 (unknown locally, in a LAC the local database lacks), LTE 262/1/20/27443140 far more precisely
 * than the local fixture (range 100 m, 50 samples: accuracy 50 m against 340 m), and 262/1/10/1 at a
 * different place than the local fixture, so that an answer shows where it came from.
 */
function remoteDb(): string {
  const dir = tempDir('wb-remote-');
  const csv = join(dir, 'cells.csv');
  writeFileSync(
    csv,
    [
      HEADER,
      'GSM,262,1,50,50,,13.450000,52.520000,200,50,1,1600000000,1700000000,0',
      'LTE,262,1,20,27443140,101,11.590000,48.150000,100,50,1,1600000000,1700000000,0',
      'GSM,262,1,10,1,,13.500000,52.600000,1000,20,1,1600000000,1700000000,0',
    ].join('\n'),
  );
  const db = join(dir, 'db');
  const r = cli(['import', '--quiet', '--db', db, csv]);
  if (r.code !== 0) throw new Error(`remote import failed: ${r.stderr}`);
  return db;
}

const gsm = (lac: number, cid: number) => ({ radio: 'gsm', mcc: 262, mnc: 1, lac, cid });
/** Known only to the remote. */
const onlyRemote = { token: 't', cells: [gsm(50, 50)], address: 0 };
/** Known to both; the remote's answer is 50 m, the local one 340 m. */
const poorLocally = {
  token: 't',
  cells: [{ radio: 'lte', mcc: 262, mnc: 1, lac: 20, cid: 27443140 }],
  address: 0,
};
/** Known to both at different places: local 52.5/13.4, remote 52.6/13.5. */
const known = { token: 't', cells: [gsm(10, 1)], address: 0 };

let localDb: string;
let remote: TestServer;
let remoteToken: string;
const engines: Engine[] = [];
const servers: http.Server[] = [];

beforeAll(async () => {
  localDb = fixtureDb();
  remote = await startTestServer({ engine: { db: remoteDb(), now: NOW } });
  remoteToken = remote.tokens.create({ geolocationPerDay: 1000 }).token;
});

afterAll(async () => {
  for (const e of engines) e.close();
  for (const s of servers) s.close();
  await remote?.close();
});

/**
 * A local engine over the fixture database with `remote` options. Learning from the remote is
 * off unless asked for: the engines share one database, and a learned station would change what
 * the next test's engine knows.
 */
async function open(options: Partial<RemoteOptions>, db = localDb): Promise<Engine> {
  const engine = await Engine.open({
    db,
    now: NOW,
    remote: { urls: [`${remote.base}/v2`], token: remoteToken, backoffMs: 1, learn: false, ...options },
  });
  engines.push(engine);
  return engine;
}

/**
 * A plain HTTP server on loopback: `handle` gets the request count (from 1) and the body, after
 * `delayMs`; probes (bodies without stations) get a well-formed error after the same delay.
 */
interface Fake {
  url: string;
  /** Requests that carried stations (probes carry none). */
  calls: number;
  probes: number;
  server: http.Server;
}

async function fake(
  handle: (n: number, body: string, res: http.ServerResponse) => void | Promise<void>,
  delayMs = 0,
): Promise<Fake> {
  const f: Fake = { url: '', calls: 0, probes: 0, server: http.createServer() };
  f.server.on('request', (req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const probe = !body.includes('"cells"') && !body.includes('"wifi"');
      if (probe) f.probes++;
      else f.calls++;
      const n = f.calls;
      setTimeout(() => {
        if (probe) json(res, { status: 'error', message: 'No network data provided', balance: 1 });
        else void handle(n, body, res);
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => f.server.listen(0, '127.0.0.1', resolve));
  const address = f.server.address() as { port: number };
  f.url = `http://127.0.0.1:${address.port}/v2`;
  servers.push(f.server);
  return f;
}

const json = (res: http.ServerResponse, value: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};
const okAnswer = (lat: number) => ({ status: 'ok', lat, lon: 13.4, accuracy: 20, balance: 7 });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const remoteBalance = () => remote.tokens.balance(remoteToken, 'geolocation');

describe('policies against a real Whereabouts remote', () => {
  it('local (the default) never asks the remote', async () => {
    const counting = await fake((_n, _b, res) => json(res, okAnswer(1)));
    const engine = await open({ urls: [counting.url], mode: undefined });
    expect(await engine.locate(onlyRemote)).toEqual({ status: 'error', message: 'No matches found' });
    expect(await engine.locate(known)).toEqual(engine.process(known));
    expect(counting.calls + counting.probes).toBe(0);
  });

  it('fallback asks the remote on No matches found, with the remote balance passed through', async () => {
    const engine = await open({ mode: 'fallback', cacheTtlMs: 0 });
    const before = remoteBalance();
    const r = await engine.locate(onlyRemote);
    expect(r).toMatchObject({ status: 'ok', lat: 52.52, lon: 13.45 });
    expect(r.balance).toBe(before - 1);
    expect(remoteBalance()).toBe(before - 1);
  });

  it('fallback asks the remote when the local accuracy is worse than the threshold, keeps the better', async () => {
    const asks = await open({ mode: 'fallback', accuracyThreshold: 300, cacheTtlMs: 0 });
    expect(asks.process(poorLocally).accuracy).toBe(783);
    expect(await asks.locate(poorLocally)).toMatchObject({ status: 'ok', lat: 48.15, accuracy: 96 });
    // Under the threshold the local answer stands, and the remote is not charged.
    const before = remoteBalance();
    const content = await open({ mode: 'fallback', accuracyThreshold: 1000, cacheTtlMs: 0 });
    expect(await content.locate(poorLocally)).toMatchObject({ lat: 48.14, accuracy: 783 });
    expect(remoteBalance()).toBe(before);
  });

  it('fallback keeps the local answer when the remote is worse or knows nothing', async () => {
    const worse = await fake((_n, _b, res) => json(res, { ...okAnswer(10), accuracy: 5000 }));
    const engine = await open({ urls: [worse.url], mode: 'fallback', accuracyThreshold: 100 });
    expect(await engine.locate(known)).toMatchObject({ lat: 52.5, accuracy: 1002 });
    expect(worse.calls).toBe(1);
    const none = await fake((_n, _b, res) => json(res, { status: 'error', message: 'No matches found' }));
    const e2 = await open({ urls: [none.url], mode: 'fallback', accuracyThreshold: 100 });
    expect(await e2.locate(known)).toMatchObject({ lat: 52.5, accuracy: 1002 });
  });

  it('remote-first uses the remote answer, and the local one when the remote knows nothing', async () => {
    const engine = await open({ mode: 'remote-first', cacheTtlMs: 0 });
    expect(await engine.locate(known)).toMatchObject({ status: 'ok', lat: 52.6, lon: 13.5 });
    // 262/1/10/2 is only in the local fixture (without lacf the remote has no match).
    const localOnly = { token: 't', cells: [gsm(10, 2)], address: 0, fallbacks: { lacf: 0 } };
    expect(await engine.locate(localOnly)).toMatchObject({
      lat: 52.51,
    });
  });

  it('remote-first answers locally when the remote is down', async () => {
    const gone = await fake(() => {});
    await new Promise<void>((resolve) => gone.server.close(() => resolve()));
    const engine = await open({ urls: [gone.url], mode: 'remote-first', retries: 1 });
    expect(await engine.locate(known)).toEqual(engine.process(known));
    expect(engine.remoteStatus()?.last_error).toMatch(/ECONNREFUSED/);
  });

  it('never sends an invalid request, nor one that wants no location', async () => {
    const counting = await fake((_n, _b, res) => json(res, okAnswer(1)));
    const engine = await open({ urls: [counting.url], mode: 'remote-first' });
    expect(await engine.locate({ cells: [{ radio: 'gsm', mcc: 262, mnc: 1, cid: 1 }] })).toEqual({
      status: 'error',
      message: 'No location area code provided',
    });
    expect(await engine.locate({ ...known, geolocation: 0 })).toEqual({ status: 'ok' });
    expect(counting.calls).toBe(0);
  });

  it('sends the normalised stations with the remote token, not the caller token, GPS or device id', async () => {
    let sent: Record<string, unknown> = {};
    const capture = await fake((_n, body, res) => {
      sent = JSON.parse(body);
      json(res, okAnswer(1));
    });
    const engine = await open({ urls: [capture.url], mode: 'remote-first', token: 'remote-secret' });
    await engine.locate({
      token: 'caller',
      id: 'dev1',
      radio: 'GSM',
      mcc: 262,
      mnc: 1,
      cells: [{ lac: 10, cid: 1, signal: -70 }],
      wifi: [{ bssid: '00-11-22-33-44-01' }, { bssid: '001122334402', signal: -60 }],
      gps: [{ lat: 1, lon: 2 }],
      address: 0,
    });
    expect(sent).toEqual({
      token: 'remote-secret',
      cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1, signal: -70 }],
      wifi: [{ bssid: '00:11:22:33:44:01' }, { bssid: '00:11:22:33:44:02', signal: -60 }],
      fallbacks: { lacf: 1, scf: 1, ipf: 0 },
      bt: 1,
      address: 0,
    });
    // The status shows the token only masked.
    expect(JSON.stringify(engine.remoteStatus())).not.toContain('remote-secret');
    expect(engine.remoteStatus()?.token).toBe('remo…');
  });
});

describe('retries, timeouts and garbage', () => {
  it('retries HTTP 500 and UNKNOWN_ERROR, then uses the answer', async () => {
    const flaky = await fake((n, _b, res) => {
      if (n === 1) json(res, { status: 'error', message: 'UNKNOWN_ERROR' }, 500);
      else if (n === 2) json(res, { status: 'error', message: 'UNKNOWN_ERROR' });
      else json(res, okAnswer(40));
    });
    const engine = await open({ urls: [flaky.url], mode: 'remote-first', retries: 2 });
    expect(await engine.locate(known)).toMatchObject({ status: 'ok', lat: 40 });
    expect(flaky.calls).toBe(3);
  });

  it('gives up after the retries and answers locally', async () => {
    const broken = await fake((_n, _b, res) => json(res, { status: 'error', message: 'x' }, 503));
    const engine = await open({ urls: [broken.url], mode: 'remote-first', retries: 2 });
    expect(await engine.locate(known)).toEqual(engine.process(known));
    expect(broken.calls).toBe(3);
  });

  it('does not retry a 4xx refusal or a valid No matches found', async () => {
    const refusing = await fake((_n, _b, res) =>
      json(
        res,
        { status: 'error', message: 'Invalid token - get a trial token by signing up for free' },
        401,
      ),
    );
    const engine = await open({ urls: [refusing.url], mode: 'remote-first', retries: 3 });
    expect(await engine.locate(known)).toEqual(engine.process(known));
    expect(refusing.calls).toBe(1);
    // A refusal says the service is up: it does not count against the breaker.
    expect(engine.remoteStatus()).toMatchObject({ breaker: 'closed', consecutive_failures: 0 });

    const unknown = await fake((_n, _b, res) => json(res, { status: 'error', message: 'No matches found' }));
    const e2 = await open({ urls: [unknown.url], mode: 'fallback', retries: 3 });
    expect(await e2.locate(onlyRemote)).toMatchObject({ status: 'error', message: 'No matches found' });
    expect(unknown.calls).toBe(1);
  });

  it('gives up on a remote that hangs after the timeout', async () => {
    const hanging = await fake(() => {});
    const engine = await open({ urls: [hanging.url], mode: 'remote-first', timeoutMs: 150, retries: 1 });
    const started = Date.now();
    expect(await engine.locate(known)).toEqual(engine.process(known));
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(3000);
    expect(hanging.calls).toBe(2);
    expect(engine.remoteStatus()?.last_error).toMatch(/within 150 ms/);
  });

  it.each([
    ['a body that is not JSON', (res: http.ServerResponse) => res.end('<html>oops</html>')],
    ['a JSON array', (res: http.ServerResponse) => json(res, [1, 2])],
    ['a lat that is a string', (res: http.ServerResponse) => json(res, { ...okAnswer(1), lat: '52' })],
    ['a lat out of range', (res: http.ServerResponse) => json(res, { ...okAnswer(1), lat: 1e9 })],
    ['no status', (res: http.ServerResponse) => json(res, { lat: 1, lon: 2, accuracy: 3 })],
    ['a huge body', (res: http.ServerResponse) => res.end(`{"status":"ok","x":"${'a'.repeat(2_000_000)}"}`)],
    [
      'a huge body without a length',
      (res: http.ServerResponse) => {
        res.write('{"status":"ok","x":"');
        for (let i = 0; i < 100; i++) res.write('a'.repeat(10_000));
        res.end('"}');
      },
    ],
    [
      'a connection cut mid-body',
      (res: http.ServerResponse) => {
        res.writeHead(200, { 'content-length': '1000' });
        res.write('{"status":');
        setTimeout(() => res.destroy(), 10);
      },
    ],
  ])('takes %s as a failure, not retried, and answers locally', async (_name, reply) => {
    const garbage = await fake((_n, _b, res) => reply(res));
    const engine = await open({ urls: [garbage.url], mode: 'remote-first', retries: 0 });
    expect(await engine.locate(known)).toEqual(engine.process(known));
    expect(engine.remoteStatus()).toMatchObject({ consecutive_failures: 1 });
  });
});

describe('circuit breaker', () => {
  const withBreaker = (url: string, breakerThreshold: number, breakerCooldownMs: number) =>
    open({
      urls: [url],
      mode: 'remote-first',
      retries: 0,
      breakerThreshold,
      breakerCooldownMs,
      cacheTtlMs: 0,
    });

  it('opens after N failed calls, half-opens after the cool-down, closes on success', async () => {
    let healthy = false;
    const remoteish = await fake((_n, _b, res) => (healthy ? json(res, okAnswer(30)) : json(res, {}, 500)));
    const engine = await withBreaker(remoteish.url, 2, 200);
    const local = engine.process(known);
    await engine.locate(known);
    expect(engine.remoteStatus()?.breaker).toBe('closed');
    await engine.locate(known);
    expect(engine.remoteStatus()?.breaker).toBe('open');
    expect(remoteish.calls).toBe(2);
    // Open: answered locally at once, without a call.
    expect(await engine.locate(known)).toEqual(local);
    expect(remoteish.calls).toBe(2);
    // After the cool-down one probe call goes out; it fails, and the breaker opens again.
    await pause(250);
    expect(await engine.locate(known)).toEqual(local);
    expect(remoteish.calls).toBe(3);
    expect(engine.remoteStatus()?.breaker).toBe('open');
    expect(await engine.locate(known)).toEqual(local);
    expect(remoteish.calls).toBe(3);
    // The remote recovers: the next probe closes the breaker.
    healthy = true;
    await pause(250);
    expect(await engine.locate(known)).toMatchObject({ lat: 30 });
    expect(engine.remoteStatus()).toMatchObject({ breaker: 'closed', consecutive_failures: 0 });
  });

  it('lets only one call through while half-open', async () => {
    let fail = true;
    const slow = await fake((_n, _b, res) => {
      if (fail) json(res, {}, 500);
      else setTimeout(() => json(res, okAnswer(31)), 100);
    });
    const engine = await withBreaker(slow.url, 1, 50);
    await engine.locate(known);
    expect(engine.remoteStatus()?.breaker).toBe('open');
    fail = false;
    await pause(80);
    const [a, b] = await Promise.all([engine.locate(known), engine.locate(known)]);
    expect([a.lat, b.lat].sort()).toEqual([31, 52.5]);
    expect(slow.calls).toBe(2);
  });
});

describe('regions', () => {
  it('uses the fastest region, fails over to the next, and re-probes', async () => {
    let fastDown = false;
    // Everything the slow one says, probe answers too, takes 250 ms.
    const slow = await fake((_n, _b, res) => json(res, okAnswer(11)), 250);
    const fast = await fake((_n, _b, res) => (fastDown ? json(res, {}, 502) : json(res, okAnswer(22))));
    const engine = await open({
      urls: [slow.url, fast.url],
      mode: 'remote-first',
      retries: 1,
      cacheTtlMs: 0,
      reprobeMs: 300,
    });
    expect(await engine.locate(known)).toMatchObject({ lat: 22 });
    expect(slow.probes).toBe(1);
    expect(fast.probes).toBe(1);
    expect(engine.remoteStatus()?.regions.map((r) => r.url)).toEqual([
      `${fast.url}/process`,
      `${slow.url}/process`,
    ]);

    // The fast one fails: the retry goes to the slow one, which then leads.
    fastDown = true;
    expect(await engine.locate(known)).toMatchObject({ lat: 11 });
    expect(engine.remoteStatus()?.regions[0]).toMatchObject({ url: `${slow.url}/process`, up: true });
    expect(await engine.locate(known)).toMatchObject({ lat: 11 });

    // It recovers; after reprobeMs a background probe ranks it first again.
    fastDown = false;
    await pause(320);
    await engine.locate(known); // starts the re-probe
    await pause(450);
    expect(fast.probes).toBe(2);
    expect(await engine.locate(known)).toMatchObject({ lat: 22 });
  });

  it('accepts the .php path of older deployments', async () => {
    let path = '';
    const php = await fake((_n, _b, res) => json(res, okAnswer(5)));
    php.server.prependListener('request', (req) => {
      path = req.url ?? '';
    });
    const engine = await open({ urls: [`${php.url}/`], path: '/process.php', mode: 'remote-first' });
    expect(await engine.locate(known)).toMatchObject({ lat: 5 });
    expect(path).toBe('/v2/process.php');
  });
});

describe('cache and hook', () => {
  it('reuses an answer within the TTL without a balance, and asks again after it', async () => {
    let clock = 1_000_000;
    const engine = await open({ mode: 'remote-first', cacheTtlMs: 60_000, now: () => clock });
    const before = remoteBalance();
    const first = await engine.locate(onlyRemote);
    expect(first).toMatchObject({ status: 'ok', lat: 52.52, balance: before - 1 });
    // Same stations, other signal: the cache answers; no stale balance is claimed.
    const again = await engine.locate({ ...onlyRemote, cells: [{ ...gsm(50, 50), signal: -80 }] });
    const { balance: _b, ...withoutBalance } = first;
    expect(again).toEqual(withoutBalance);
    expect(remoteBalance()).toBe(before - 1);
    expect(engine.remoteStatus()?.cache).toMatchObject({ entries: 1, hits: 1 });
    // Other wishes are other entries.
    expect((await engine.locate({ ...onlyRemote, bt: 2 })).balance).toBe(before - 2);
    clock += 60_001;
    expect((await engine.locate(onlyRemote)).balance).toBe(before - 3);
  });

  it('keeps at most cacheSize answers, least recently used out first', async () => {
    const counting = await fake((n, _b, res) => json(res, okAnswer(n)));
    const engine = await open({ urls: [counting.url], mode: 'remote-first', cacheSize: 2 });
    const req = (cid: number) => ({ token: 't', cells: [gsm(70, cid)], address: 0 });
    await engine.locate(req(1));
    await engine.locate(req(2));
    await engine.locate(req(1)); // hit: 1 is now the most recent
    await engine.locate(req(3)); // 2 leaves
    expect(counting.calls).toBe(3);
    expect(await engine.locate(req(1))).toMatchObject({ lat: 1 });
    expect(counting.calls).toBe(3);
    expect(await engine.locate(req(2))).toMatchObject({ lat: 4 });
  });

  it('calls the hook with the stations and the remote position, once per fresh located answer', async () => {
    const seen: [LocateRequest, RemoteObservation][] = [];
    const engine = await open({
      mode: 'fallback',
      onRemoteAnswer: (request, observation) => {
        seen.push([request, observation]);
        throw new Error('a broken hook costs nothing');
      },
    });
    const wifi = [{ bssid: '00:11:22:33:44:aa' }, { bssid: '00:11:22:33:44:bb' }];
    const r = await engine.locate({ ...onlyRemote, wifi });
    expect(r).toMatchObject({ status: 'ok', lat: 52.52 });
    await engine.locate({ ...onlyRemote, wifi }); // from the cache: not told again
    await engine.locate({ token: 't', cells: [gsm(99, 99)], address: 0 }); // no match: not told
    expect(seen).toHaveLength(1);
    const [request, observation] = seen[0] as [LocateRequest, RemoteObservation];
    expect(observation).toMatchObject({
      cells: [{ radio: 0, mcc: 262, mnc: 1, lac: 50, cid: 50 }],
      wifi: [{ bssid: 0x0011223344aa }, { bssid: 0x0011223344bb }],
      lat: 52.52,
      lon: 13.45,
      accuracy: r.accuracy,
      url: `${remote.base}/v2/process`,
    });
    expect(request.cells).toBe(observation.cells);
  });

  it('learns a fresh remote answer into the engine, so the station is then known locally', async () => {
    const engine = await open({ mode: 'fallback', learn: true }, fixtureDb());
    expect(engine.process(onlyRemote)).toMatchObject({ status: 'error', message: 'No matches found' });
    const r = await engine.locate(onlyRemote);
    expect(r).toMatchObject({ status: 'ok', lat: 52.52, lon: 13.45 });
    // the batch is learned off the answer's path: wait until the overlay holds it
    for (let i = 0; i < 200 && engine.stats().overlayCells === 0; i++)
      await new Promise((d) => setTimeout(d, 10));
    expect(engine.stats().overlayCells).toBe(1);
    const local = engine.process(onlyRemote);
    expect(local).toMatchObject({ status: 'ok' });
    expect(Math.abs((local as { lat: number }).lat - 52.52)).toBeLessThan(0.001);
    expect(Math.abs((local as { lon: number }).lon - 13.45)).toBeLessThan(0.001);
  });

  it('learns nothing without a database of its own or with learn: false', async () => {
    const engine = await open({ mode: 'fallback', learn: false }, fixtureDb());
    await engine.locate(onlyRemote);
    await new Promise((d) => setTimeout(d, 50));
    expect(engine.stats().overlayCells).toBe(0);
    await expect(open({ mode: 'fallback', learn: 'yes' as unknown as boolean })).rejects.toThrow(
      /remote.learn must be true or false/,
    );
  });

  it('does not tell the hook of answers a fallback made', async () => {
    const seen: unknown[] = [];
    const lacf = await fake((_n, _b, res) => json(res, { ...okAnswer(3), fallback: 'lacf' }));
    const engine = await open({
      urls: [lacf.url],
      mode: 'remote-first',
      onRemoteAnswer: (r) => seen.push(r),
    });
    expect(await engine.locate(known)).toMatchObject({ lat: 3, fallback: 'lacf' });
    expect(seen).toHaveLength(0);
  });
});

describe('options', () => {
  it.each([
    [{ mode: 'fallback', urls: [] }, /needs at least one URL/],
    [{ mode: 'fallback', token: ' ' }, /needs remote.token/],
    [{ mode: 'sometimes' }, /remote.mode must be one of/],
    [{ mode: 'fallback', urls: ['ftp://x/v2'] }, /only http and https/],
    [{ mode: 'fallback', urls: ['not a url'] }, /not a URL/],
    [{ mode: 'fallback', timeoutMs: 0 }, /remote.timeoutMs must be an integer/],
    [{ mode: 'fallback', retries: 1.5 }, /remote.retries must be an integer/],
  ])('rejects %j with a clear message', async (options, message) => {
    await expect(
      Engine.open({
        db: localDb,
        remote: { urls: ['http://127.0.0.1:9/v2'], token: 'x', ...(options as Partial<RemoteOptions>) },
      }),
    ).rejects.toThrow(message);
  });
});

describe('the server with a remote', () => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await startTestServer({
      engine: {
        db: localDb,
        now: NOW,
        remote: { urls: [`${remote.base}/v2`], token: remoteToken, mode: 'fallback' },
      },
      server: { healthDetail: true },
    });
    token = server.tokens.create({ geolocationPerDay: 50 }).token;
  });
  afterAll(() => server?.close());

  it('answers /v2/process from the remote, charging and reporting its own balance', async () => {
    const remoteBefore = remoteBalance();
    const res = await fetch(`${server.base}/v2/process`, {
      method: 'POST',
      body: JSON.stringify({ ...onlyRemote, token }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'ok', lat: 52.52, lon: 13.45, balance: 49 });
    expect(server.tokens.balance(token, 'geolocation')).toBe(49);
    expect(remoteBalance()).toBe(remoteBefore - 1);
  });

  it('reports the breaker in /health', async () => {
    const health = (await (await fetch(`${server.base}/health`)).json()) as Record<string, unknown>;
    expect(health.remote).toMatchObject({
      mode: 'fallback',
      breaker: 'closed',
      regions: [{ url: `${remote.base}/v2/process`, up: true }],
    });
    expect(JSON.stringify(health)).not.toContain(remoteToken);
  });
});

describe('whereabouts serve --remote-*', () => {
  it.each([
    [['--remote-url', 'http://127.0.0.1:9/v2'], /--remote-url needs --remote-mode/],
    [['--remote-mode', 'fallback'], /needs --remote-url/],
    [['--remote-mode', 'sometimes'], /--remote-mode takes local, fallback, remote-first/],
    [['--remote-mode', 'fallback', '--remote-url', 'ftp://x'], /takes http\(s\) URLs/],
    [
      ['--remote-mode', 'fallback', '--remote-url', 'http://x/v2', '--remote-timeout', '0'],
      /--remote-timeout/,
    ],
  ])('refuses %j with a usage error', (flags, message) => {
    const r = cli(['serve', '--db', localDb, ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('refuses a remote mode without a token, and takes it from WHEREABOUTS_REMOTE_TOKEN', async () => {
    const flags = ['--db', localDb, '--remote-mode', 'fallback', '--remote-url', `${remote.base}/v2`];
    const { WHEREABOUTS_REMOTE_TOKEN: _unset, ...env } = process.env;
    const r = cli(['serve', ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/set WHEREABOUTS_REMOTE_TOKEN/);

    const store = tempDir('wb-serve-');
    const serve = await startServe([...flags, '--store', store, '--workers', '0'], {
      ...env,
      WHEREABOUTS_REMOTE_TOKEN: remoteToken,
    });
    try {
      const tokens = TokenStore.open(store);
      const token = tokens.create({ geolocationPerDay: 10 }).token;
      tokens.close();
      const res = await fetch(`http://127.0.0.1:${serve.port}/v2/process`, {
        method: 'POST',
        body: JSON.stringify({ ...onlyRemote, token }),
      });
      expect(await res.json()).toMatchObject({ status: 'ok', lat: 52.52, balance: 9 });
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  });
});
