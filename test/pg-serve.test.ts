/**
 * `whereabouts serve --store postgres://...` and `whereabouts token --store postgres://...`
 * (built CLI): two servers on one database share balances, see token changes within seconds,
 * and charge exactly what they answered; /health reports a database that does not answer, and
 * everything works again once it is back.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { PgTokenStore, type PgTokenStoreOptions, StoreUnavailableError } from '../src/tokens/index.js';
import { cli, fixtureDb, root, startServe } from './helpers.js';
import { freshDatabase } from './pg.js';
import { tempDir } from './temp-dirs.js';

const clusterScript = join(root, 'scripts', 'pg-test-cluster.sh');

/** Runs scripts/pg-test-cluster.sh COMMAND DIR; returns its last output line (the URL on start). */
function cluster(command: string, dir: string): string {
  const r = spawnSync('bash', [clusterScript, command, dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pg-test-cluster.sh ${command} failed: ${r.stderr}`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * A token of 100 requests a day in the store at `url`, a server on the fixture database over
 * that store, and a request body for the fixture's known cell.
 */
async function serverOnStore(url: string, options: PgTokenStoreOptions) {
  const store = await PgTokenStore.open(url, options);
  const t = await store.create({ geolocationPerDay: 100 });
  const serve = await startServe(['--db', fixtureDb(), '--store', url, '--workers', '0']);
  children.push(serve.child);
  const base = `http://127.0.0.1:${serve.port}`;
  const body = JSON.stringify({
    token: t.token,
    cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }],
  });
  return { store, t, serve, base, body };
}

it('two servers on one PostgreSQL database share the balance and token changes', async () => {
  const db = fixtureDb();
  const store = await freshDatabase();
  const created = cli(['token', 'create', '--store', store, '--geolocation', '300']);
  expect(created.stderr).toBe('');
  expect(created.code).toBe(0);
  const token = (JSON.parse(created.stdout) as { token: string }).token;
  const listed = cli(['token', 'list', '--store', store]);
  expect(listed.code).toBe(0);
  expect(JSON.parse(listed.stdout)).toHaveLength(1);

  // One cluster of 2 workers and one single process, as two machines would be.
  const a = await startServe(['--db', db, '--store', store, '--workers', '2']);
  children.push(a.child);
  const b = await startServe(['--db', db, '--workers', '0'], {
    ...process.env,
    WHEREABOUTS_STORE_URL: store,
  });
  children.push(b.child);
  const body = JSON.stringify({ token, cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }] });
  const post = (port: number) =>
    fetch(`http://127.0.0.1:${port}/v2/process.php`, { method: 'POST', body }).then(
      async (r) => (await r.json()) as { status: string; balance: number; message?: string },
    );

  expect(await post(a.port)).toMatchObject({ status: 'ok', balance: 299 });
  expect(await post(b.port)).toMatchObject({ status: 'ok', balance: 298 });
  const answers = await Promise.all(Array.from({ length: 400 }, (_, i) => post(i % 2 ? a.port : b.port)));
  const ok = answers.filter((r) => r.status === 'ok').length;
  expect(ok).toBe(298);
  const balance = await fetch(`http://127.0.0.1:${b.port}/v2/balance?token=${token}`);
  expect(await balance.json()).toEqual({ status: 'ok', balance_geolocation: 0, balance_geocoding: 5000 });
  const pg = await PgTokenStore.open(store);
  try {
    expect(await pg.balance(token, 'geolocation')).toBe(0);
  } finally {
    await pg.close();
  }

  // A token revoked through the CLI is refused by both servers within seconds.
  const fresh = JSON.parse(cli(['token', 'create', '--store', store]).stdout) as { token: string };
  const freshBody = JSON.stringify({
    token: fresh.token,
    cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }],
  });
  const postFresh = (port: number) =>
    fetch(`http://127.0.0.1:${port}/v2/process.php`, { method: 'POST', body: freshBody }).then(
      async (r) => (await r.json()) as { status: string },
    );
  await vi.waitFor(async () => expect(await postFresh(b.port)).toMatchObject({ status: 'ok' }), {
    timeout: 5000,
    interval: 50,
  });
  expect(cli(['token', 'revoke', fresh.token, '--store', store]).code).toBe(0);
  for (const port of [a.port, b.port])
    await vi.waitFor(async () => expect((await postFresh(port)).status).not.toBe('ok'), {
      timeout: 5000,
      interval: 50,
    });

  expect((await fetch(`http://127.0.0.1:${a.port}/health`)).status).toBe(200);
  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  expect(await a.exited).toBe(0);
  expect(await b.exited).toBe(0);
});

it('learn --contributions names tokens from a PostgreSQL store; --store elsewhere in learn is refused', async () => {
  const db = fixtureDb();
  const store = await freshDatabase();
  const listed = cli(['learn', '--db', db, '--contributions', '--store', store]);
  expect(listed.stderr).toBe('');
  expect(listed.code).toBe(0);
  expect(JSON.parse(listed.stdout)).toEqual([]);
  const fromEnv = spawnSync(
    process.execPath,
    [join(root, 'bin', 'whereabouts.js'), 'learn', '--db', db, '--contributions'],
    {
      encoding: 'utf8',
      env: { ...process.env, WHEREABOUTS_STORE_URL: 'postgres://nobody@127.0.0.1:1/none' },
    },
  );
  expect(fromEnv.status).not.toBe(0);
  expect(fromEnv.stderr).toMatch(/ECONNREFUSED/);
  // A token store directory names tokens only; the token actions act on a postgres:// store.
  const misplaced = cli(['learn', '--db', db, '--quarantine-token', 'a'.repeat(16), '--store', db]);
  expect(misplaced.code).toBe(2);
  expect(misplaced.stderr).toMatch(/--contributions only/);
});

it('refuses to start when PostgreSQL does not answer, saying so', () => {
  const db = fixtureDb();
  const r = cli([
    'serve',
    '--db',
    db,
    '--workers',
    '0',
    '--port',
    '0',
    '--store',
    'postgres://nobody@127.0.0.1:1/none',
  ]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/ECONNREFUSED/);
});

it('while PostgreSQL is down: charges fail fast, /health says 503; both recover when it is back', async () => {
  // A cluster of this test's own, which it stops and starts again.
  const dir = tempDir('wb-pg-outage-');
  const url = cluster('start', dir);
  try {
    const { store, t, serve, base, body } = await serverOnStore(url, { connectTimeoutMs: 1000 });
    const post = () => fetch(`${base}/v2/process.php`, { method: 'POST', body });
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect(await (await post()).json()).toMatchObject({ status: 'ok', balance: 99 });
    expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 98 });

    cluster('halt', dir);
    const started = Date.now();
    await expect(store.charge(t.token, 'geolocation')).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3000);
    expect(store.problem).toBeDefined();
    await expect(store.ping(500)).rejects.toThrow();
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
    const refused = await post();
    // Requests authorize against the token copy meanwhile; a request is never answered as
    // charged: spec 7.1's shape with the service's server-error message, HTTP 503, retry soon.
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      status: 'error',
      message: 'Unknown error - please try again after some time',
      balance: 0,
    });
    // The geocoding family (spec 7.2) and the balance endpoint: UNKNOWN_ERROR, HTTP 503.
    for (const path of [`/v2/reverse?token=${t.token}&lat=52.1&lon=4.3`, `/v2/balance?token=${t.token}`]) {
      const r = await fetch(`${base}${path}`);
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
    }

    cluster('resume', dir);
    await vi.waitFor(async () => expect((await fetch(`${base}/health`)).status).toBe(200), {
      timeout: 10_000,
      interval: 100,
    });
    expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 97 });
    expect(store.problem).toBeUndefined();
    expect(await (await post()).json()).toMatchObject({ status: 'ok', balance: 96 });
    // The listening connection is back: a change made elsewhere reaches the server's copy.
    const admin = await PgTokenStore.open(url);
    await admin.revoke(t.token);
    await admin.close();
    await vi.waitFor(async () => expect((await (await post()).json()).status).toBe('error'), {
      timeout: 5000,
      interval: 100,
    });
    await store.close();
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  } finally {
    cluster('stop', dir);
  }
});

it('two servers under load through a PostgreSQL outage: fast spec-shaped refusals, recovery, charges equal successes', async () => {
  const dir = tempDir('wb-pg-outage-load-');
  const url = cluster('start', dir);
  try {
    const admin = await PgTokenStore.open(url);
    const t = await admin.create({ geolocationPerDay: 1_000_000 });
    await admin.close();
    const db = fixtureDb();
    const a = await startServe(['--db', db, '--store', url, '--workers', '0']);
    children.push(a.child);
    const b = await startServe(['--db', db, '--store', url, '--workers', '0']);
    children.push(b.child);
    const body = JSON.stringify({
      token: t.token,
      cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }],
    });
    type Seen = { phase: string; http: number; status?: string; message?: string; ms: number };
    const seen: Seen[] = [];
    let phase = 'before';
    let stop = false;
    let transportErrors = 0;
    const loop = async (port: number) => {
      while (!stop) {
        const started = Date.now();
        const at = phase;
        try {
          const r = await fetch(`http://127.0.0.1:${port}/v2/process`, { method: 'POST', body });
          const json = (await r.json()) as { status?: string; message?: string };
          seen.push({
            phase: at,
            http: r.status,
            status: json.status,
            message: json.message,
            ms: Date.now() - started,
          });
        } catch {
          transportErrors++;
        }
      }
    };
    const loops = Array.from({ length: 16 }, (_, i) => loop(i % 2 ? a.port : b.port));
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await pause(1000);
    cluster('halt', dir);
    phase = 'down';
    await pause(1500);
    const healthDown = await Promise.all([a.port, b.port].map((p) => fetch(`http://127.0.0.1:${p}/health`)));
    expect(healthDown.map((r) => r.status)).toEqual([503, 503]);
    cluster('resume', dir);
    phase = 'resumed';
    for (const port of [a.port, b.port])
      await vi.waitFor(
        async () => expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200),
        {
          timeout: 10_000,
          interval: 100,
        },
      );
    phase = 'after';
    await pause(1000);
    stop = true;
    await Promise.all(loops);

    expect(transportErrors).toBe(0);
    const ok = seen.filter((s) => s.status === 'ok').length;
    const of = (p: string) => seen.filter((s) => s.phase === p);
    // Served before and after; while down, refused fast in spec 7.1's shape with HTTP 503.
    expect(of('before').filter((s) => s.status === 'ok').length).toBeGreaterThan(0);
    expect(of('after').length).toBeGreaterThan(0);
    expect(of('after').every((s) => s.status === 'ok')).toBe(true);
    const down = of('down').filter((s) => s.status !== 'ok');
    expect(down.length).toBeGreaterThan(10);
    for (const s of down) {
      expect(s).toMatchObject({
        http: 503,
        status: 'error',
        message: 'Unknown error - please try again after some time',
      });
      expect(s.ms).toBeLessThan(3000);
    }
    // Nothing but successes and spec-shaped refusals, and every success charged exactly once.
    expect(seen.every((s) => s.status === 'ok' || s.http === 503)).toBe(true);
    const reader = await PgTokenStore.open(url);
    const charged = 1_000_000 - (await reader.balance(t.token, 'geolocation'));
    await reader.close();
    expect(charged).toBe(ok);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
  } finally {
    cluster('stop', dir);
  }
}, 60_000);

it('a PostgreSQL that accepts and never answers: charges and requests fail within their time limits, then recover', async () => {
  const dir = tempDir('wb-pg-frozen-');
  const url = cluster('start', dir);
  try {
    const { store, t, serve, base, body } = await serverOnStore(url, {
      connectTimeoutMs: 500,
      queryTimeoutMs: 500,
      resolveMs: 500,
    });
    expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 99 });
    cluster('freeze', dir);
    try {
      let started = Date.now();
      await expect(store.charge(t.token, 'geolocation')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(2000);
      // The server's own limits (5 s to connect, 5 s per query): a refusal, not a hang.
      started = Date.now();
      const r = await fetch(`${base}/v2/process`, { method: 'POST', body });
      expect(Date.now() - started).toBeLessThan(12_000);
      expect(r.status).toBe(503);
      expect(await r.json()).toMatchObject({ status: 'error', balance: 0 });
      expect((await fetch(`${base}/health`)).status).toBe(503);
    } finally {
      cluster('thaw', dir);
    }
    await vi.waitFor(async () => expect((await fetch(`${base}/health`)).status).toBe(200), {
      timeout: 10_000,
      interval: 100,
    });
    expect(await (await fetch(`${base}/v2/process`, { method: 'POST', body })).json()).toMatchObject({
      status: 'ok',
      balance: 98,
    });
    expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 97 });
    await store.close();
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  } finally {
    cluster('stop', dir);
  }
}, 60_000);
