/**
 * Learning across servers on one PostgreSQL store (built CLI; docs/deploy.md, "Learning across
 * servers"): GPS submissions to one server are folded by the elected compactor into a published
 * generation that the other server answers from; killing the compactor lets the other take
 * over; the generation switch loses no request; `compact --store` and `learn --store` publish.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it, vi } from 'vitest';
import {
  COMPACTOR_LOCK,
  foldSubmissions,
  GenerationStore,
  installedPublication,
  updateShared,
  workDirOf,
} from '../src/generations/index.js';
import { parseRequest } from '../src/locating/request/index.js';
import { PgObservationStore, tokenHash } from '../src/observations/index.js';
import { cli, fixtureCell, fixtureDb, root, startServe } from './helpers.js';
import { freshDatabase } from './pg.js';
import { tempDir } from './temp-dirs.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Fix times start a day ago: the core reads a timestamp from the future as the receiving time. */
const T0 = Date.now() - 86_400_000;

type Answer = { status: string; lat?: number; lon?: number; fallback?: string; message?: string };

async function post(port: number, body: unknown): Promise<Answer> {
  const r = await fetch(`http://127.0.0.1:${port}/v2/process`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  return (await r.json()) as Answer;
}

/** Fixture cell 262/1/10/`cid` asked for alone. */
const ask = (port: number, token: string, cid: number) => post(port, { token, cells: [fixtureCell(cid)] });

/** GPS submissions placing cell `cid` at (lat, lon), `n` of them a minute apart. */
async function submit(port: number, token: string, cid: number, lat: number, lon: number, n = 3) {
  for (let i = 0; i < n; i++) {
    const r = await post(port, {
      token,
      cells: [fixtureCell(cid)],
      gps: [{ lat, lon: lon + i * 0.0001, accuracy: 10, timestamp: T0 + i * 60_000 }],
      geolocation: 0,
      gps_sandbox: 0,
      metadata: 1,
      id: `device${i}`,
    });
    expect(r, JSON.stringify(r)).toMatchObject({
      status: 'ok',
      metadata: { gps: { status: 'ok', gps_sandbox: 0 } },
    });
  }
}

/** The pid named by the application_name of the session holding the compactor lock. */
async function compactorPid(url: string): Promise<number | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ application_name: string }>(
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted
         AND ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint`,
      [COMPACTOR_LOCK],
    );
    const name = r.rows[0]?.application_name;
    const m = name === undefined ? null : /pid (\d+)$/.exec(name);
    return m ? Number(m[1]) : undefined;
  } finally {
    await client.end();
  }
}

it('two servers learn together: submissions to A answered by B, a takeover when the compactor dies, no request lost', async () => {
  const store = await freshDatabase();
  const created = cli(['token', 'create', '--store', store, '--gps', '--geolocation', '100000']);
  expect(created.code).toBe(0);
  const token = (JSON.parse(created.stdout) as { token: string }).token;
  // Two machines: a directory each, one database.
  const a = await startServe([
    '--db',
    fixtureDb(),
    '--store',
    store,
    '--workers',
    '0',
    '--learn-interval',
    '1',
  ]);
  children.push(a.child);
  const b = await startServe(['--db', fixtureDb(), '--workers', '0', '--learn-interval', '1'], {
    ...process.env,
    WHEREABOUTS_STORE_URL: store,
  });
  children.push(b.child);

  // Cell 77 is unknown to the fixture database: B answers it through its LAC area at best.
  const before = await ask(b.port, token, 77);
  expect(before.status === 'error' || before.fallback === 'lacf').toBe(true);

  // Requests to B all the while: the generation switch must not cost one.
  let load = true;
  const failures: string[] = [];
  let answered = 0;
  const loader = (async () => {
    while (load) {
      const r = await Promise.all(
        Array.from({ length: 8 }, () => ask(b.port, token, 1).catch((e: Error) => e)),
      );
      for (const x of r) {
        if (x instanceof Error) failures.push(x.message);
        else if (x.status !== 'ok') failures.push(JSON.stringify(x));
        else answered++;
      }
    }
  })();

  await submit(a.port, token, 77, 52.6, 13.1);
  await vi.waitFor(
    async () => {
      const r = await ask(b.port, token, 77);
      expect(r.fallback).toBeUndefined();
      expect(r.lat).toBeCloseTo(52.6, 2);
    },
    { timeout: 30_000, interval: 200 },
  );
  load = false;
  await loader;
  expect(failures).toEqual([]);
  expect(answered).toBeGreaterThan(0);

  // Kill the compactor with SIGKILL: the other server takes the lock and learns on.
  const holder = await compactorPid(store);
  expect([a.child.pid, b.child.pid]).toContain(holder);
  const [dead, alive] = holder === a.child.pid ? [a, b] : [b, a];
  dead.child.kill('SIGKILL');
  await dead.exited;
  await submit(alive.port, token, 78, 52.65, 13.2);
  await vi.waitFor(
    async () => {
      const r = await ask(alive.port, token, 78);
      expect(r.fallback).toBeUndefined();
      expect(r.lat).toBeCloseTo(52.65, 2);
    },
    { timeout: 30_000, interval: 200 },
  );
  expect(await compactorPid(store)).toBe(alive.child.pid);
  // The takeover started from the published state: cell 77 is still there, and was learned once.
  expect((await ask(alive.port, token, 77)).lat).toBeCloseTo(52.6, 2);

  alive.child.kill('SIGTERM');
  expect(await alive.exited).toBe(0);
}, 120_000);

it('compact --store and learn --store publish to the shared store; a server follows', async () => {
  const store = await freshDatabase();
  const token = (JSON.parse(cli(['token', 'create', '--store', store, '--gps']).stdout) as { token: string })
    .token;
  // A server of two workers that never compacts (--learn-interval 0): the rounds come from the
  // command line, and both workers install each publication into one directory.
  const serverDb = fixtureDb();
  const s = await startServe(['--db', serverDb, '--store', store, '--workers', '2', '--learn-interval', '0']);
  children.push(s.child);
  await submit(s.port, token, 79, 52.55, 13.3);
  expect((await ask(s.port, token, 79)).fallback).not.toBe(undefined);

  const work = fixtureDb();
  const compacted = cli(['compact', '--db', work, '--store', store]);
  expect(compacted.stderr).toBe('');
  expect(compacted.code).toBe(0);
  const summary = JSON.parse(compacted.stdout) as { published: number; observations: number; added: number };
  expect(summary).toMatchObject({ observations: 3, added: 1 });
  expect(summary.published).toBeGreaterThan(0);
  await vi.waitFor(async () => expect((await ask(s.port, token, 79)).lat).toBeCloseTo(52.55, 2), {
    timeout: 30_000,
    interval: 100,
  });
  // The generation's network statistics travel with it: the follower reads them.
  const followed = cli(['stats', '--db', serverDb, '--json']);
  expect(followed.stderr).toBe('');
  expect(followed.code).toBe(0);
  expect(JSON.parse(followed.stdout).networks.length).toBeGreaterThan(0);
  // Nothing new: nothing published.
  const again = JSON.parse(cli(['compact', '--db', work, '--store', store]).stdout) as { published: null };
  expect(again.published).toBeNull();

  // A WiGLE file learned into the shared store reaches the server too.
  const file = join(tempDir('wb-pg-learn-'), 'wigle.csv');
  writeFileSync(
    file,
    'WigleWifi-1.4,appRelease=1\n' +
      'MAC,SSID,AuthMode,FirstSeen,Channel,RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,Type\n' +
      '00:1a:2b:3c:4d:01,cafe,[WPA2],2024-01-01 10:00:00,6,-60,52.501,13.401,40,10,WIFI\n' +
      '00:1a:2b:3c:4d:01,cafe,[WPA2],2024-01-01 10:01:00,6,-60,52.5011,13.4012,40,10,WIFI\n' +
      '00:1a:2b:3c:4d:02,bar,[WPA2],2024-01-01 10:00:00,11,-65,52.5012,13.4008,40,10,WIFI\n' +
      '00:1a:2b:3c:4d:02,bar,[WPA2],2024-01-01 10:01:00,11,-65,52.5009,13.4011,40,10,WIFI\n',
  );
  const learned = cli(['learn', '--quiet', '--db', work, '--store', store, file]);
  expect(learned.stderr).toMatch(/published generation \d+/);
  expect(learned.code).toBe(0);
  const wifiAsk = () =>
    post(s.port, {
      token,
      wifi: [
        { bssid: '00:1a:2b:3c:4d:01', signal: -60 },
        { bssid: '00:1a:2b:3c:4d:02', signal: -70 },
      ],
      fallbacks: { ipf: 0, lacf: 0 },
    });
  await vi.waitFor(async () => expect((await wifiAsk()).lat).toBeCloseTo(52.501, 2), {
    timeout: 30_000,
    interval: 100,
  });
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}, 120_000);

it('refuses --learn-interval without a PostgreSQL store, and compact --store with a directory', () => {
  const db = fixtureDb();
  const r = cli(['serve', '--db', db, '--workers', '0', '--learn-interval', '5']);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/--learn-interval needs --store postgres/);
  const c = cli(['compact', '--db', db, '--store', db]);
  expect(c.code).toBe(2);
  expect(c.stderr).toMatch(/postgres:\/\//);
});

/** Whether the newest publication has folded every stored submission. */
async function allFolded(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ folded: string; total: string }>(
      `SELECT (SELECT count(*) FROM observations o,
                 (SELECT cursor_tx, cursor_id FROM station_generations ORDER BY id DESC LIMIT 1) g
               WHERE (o.tx, o.id) <= (g.cursor_tx, g.cursor_id)) AS folded,
              (SELECT count(*) FROM observations) AS total`,
    );
    return r.rows[0]?.folded === r.rows[0]?.total;
  } finally {
    await client.end();
  }
}

it('the per-token safeguards hold across servers and a takeover: one token cannot move a cell, and is quarantined', async () => {
  const store = await freshDatabase();
  const create = (gps: boolean) =>
    (
      JSON.parse(cli(['token', 'create', '--store', store, ...(gps ? ['--gps'] : [])]).stdout) as {
        token: string;
      }
    ).token;
  const honest = create(false);
  const attacker = create(true);
  const dbs = [fixtureDb(), fixtureDb()];
  const servers = await Promise.all(
    dbs.map((db) => startServe(['--db', db, '--store', store, '--workers', '0', '--learn-interval', '1'])),
  );
  for (const s of servers) children.push(s.child);
  const before = await ask(servers[1]?.port as number, honest, 1);
  expect(before.status).toBe('ok');
  /** One token placing known cell 1 in Sydney, through both servers in turn. */
  const attack = async (from: number, to: number, ports: number[]) => {
    for (let i = from; i < to; i++)
      await post(ports[i % ports.length] as number, {
        token: attacker,
        cells: [fixtureCell(1)],
        gps: [{ lat: -33.8688, lon: 151.2093, accuracy: 10, timestamp: T0 + i * 60_000 }],
        geolocation: 0,
        gps_sandbox: 0,
        id: `dev${i}`,
      });
  };
  await attack(
    0,
    15,
    servers.map((s) => s.port),
  );
  await vi.waitFor(async () => expect(await allFolded(store)).toBe(true), { timeout: 30_000, interval: 200 });
  const holder = await compactorPid(store);
  const deadIndex = servers.findIndex((s) => s.child.pid === holder);
  expect(deadIndex).toBeGreaterThanOrEqual(0);
  const dead = servers[deadIndex] as (typeof servers)[number];
  const aliveIndex = 1 - deadIndex;
  const alive = servers[aliveIndex] as (typeof servers)[number];
  dead.child.kill('SIGKILL');
  await dead.exited;
  await attack(15, 30, [alive.port]);
  await vi.waitFor(async () => expect(await compactorPid(store)).toBe(alive.child.pid), { timeout: 30_000 });
  await vi.waitFor(async () => expect(await allFolded(store)).toBe(true), { timeout: 30_000, interval: 200 });

  const after = await ask(alive.port, honest, 1);
  expect(after.lat).toBeCloseTo(before.lat as number, 6);
  expect(after.lon).toBeCloseTo(before.lon as number, 6);
  // The learner's ledger travelled with the publications: the survivor's round counts all 30.
  const listed = cli(['learn', '--db', join(dbs[aliveIndex] as string, '.shared-work'), '--contributions']);
  expect(listed.code, listed.stderr).toBe(0);
  const entry = (JSON.parse(listed.stdout) as Record<string, unknown>[]).find(
    (c) => c.token === tokenHash(attacker).slice(0, 16),
  );
  expect(entry).toMatchObject({ quarantined: 'automatic', far: 30, sightings: 30, blocks: [] });

  // The operator's commands act on the shared ledger, from a directory of their own.
  const ops = join(tempDir('wb-pg-ops-'), 'db');
  const shared = cli(['learn', '--db', ops, '--store', store, '--contributions']);
  expect(shared.code, shared.stderr).toBe(0);
  const named = (JSON.parse(shared.stdout) as Record<string, unknown>[]).find(
    (c) => c.token === tokenHash(attacker).slice(0, 16),
  );
  expect(named).toMatchObject({ far: 30, sightings: 30, masked: `${attacker.slice(0, 4)}…` });
  const reverted = cli(['learn', '--db', ops, '--store', store, '--revert-token', attacker]);
  expect(reverted.code, reverted.stderr).toBe(0);
  expect(JSON.parse(reverted.stdout)).toMatchObject({ observationsDeleted: 30 });
  expect(JSON.parse(reverted.stdout).publication).toBeGreaterThan(0);
  const gone = cli(['learn', '--db', ops, '--store', store, '--contributions', '--token', attacker]);
  expect(JSON.parse(gone.stdout)).toEqual([]);
  const released = cli(['learn', '--db', ops, '--store', store, '--release-token', attacker]);
  expect(JSON.parse(released.stdout)).toMatchObject({ quarantined: false });
  expect((await ask(alive.port, honest, 1)).lat).toBeCloseTo(before.lat as number, 6);
  alive.child.kill('SIGTERM');
  expect(await alive.exited).toBe(0);
}, 120_000);

it('learning resumes by itself after PostgreSQL was away: the compactor lock is taken again', async () => {
  // A cluster of this test's own, which it stops and starts again.
  const dir = tempDir('wb-pg-learn-outage-');
  const clusterScript = join(root, 'scripts', 'pg-test-cluster.sh');
  const cluster = (command: string) => {
    const r = spawnSync('bash', [clusterScript, command, dir], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`pg-test-cluster.sh ${command} failed: ${r.stderr}`);
    return r.stdout.trim().split('\n').pop() ?? '';
  };
  const url = cluster('start');
  try {
    const token = (JSON.parse(cli(['token', 'create', '--store', url, '--gps']).stdout) as { token: string })
      .token;
    const s = await startServe([
      '--db',
      fixtureDb(),
      '--store',
      url,
      '--workers',
      '0',
      '--learn-interval',
      '1',
    ]);
    children.push(s.child);
    await submit(s.port, token, 81, 52.58, 13.25);
    await vi.waitFor(async () => expect((await ask(s.port, token, 81)).lat).toBeCloseTo(52.58, 2), {
      timeout: 30_000,
      interval: 200,
    });
    cluster('halt');
    // The server notices the broken lock connection; then the database comes back.
    await new Promise((r) => setTimeout(r, 1500));
    cluster('resume');
    await vi.waitFor(
      async () => expect((await fetch(`http://127.0.0.1:${s.port}/health`)).status).toBe(200),
      {
        timeout: 15_000,
        interval: 200,
      },
    );
    await vi.waitFor(async () => expect(await compactorPid(url)).toBe(s.child.pid), { timeout: 15_000 });
    await submit(s.port, token, 82, 52.59, 13.26);
    await vi.waitFor(async () => expect((await ask(s.port, token, 82)).lat).toBeCloseTo(52.59, 2), {
      timeout: 30_000,
      interval: 200,
    });
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  } finally {
    cluster('stop');
  }
}, 120_000);

it('a publication built on one that is no longer the newest is refused, and the change is made again on the newer', async () => {
  const store = await GenerationStore.open(await freshDatabase());
  try {
    const [dbA, dbB] = [fixtureDb(), fixtureDb()];
    const made: string[] = [];
    const outcome = await updateShared(
      { store, seed: dbA, work: workDirOf(dbA), publisher: 'a' },
      async (_work, cursor) => {
        if (made.length === 0) {
          made.push('a on nothing');
          // Another publisher comes first, while this change is being made.
          const other = await updateShared(
            { store, seed: dbB, work: workDirOf(dbB), publisher: 'b' },
            async (_w, c) => ({ cursor: c, observations: 0, detail: 'b' }),
          );
          expect(other.published?.base).toBeNull();
        } else made.push('a again');
        return { cursor, observations: 0, detail: 'a' };
      },
    );
    expect(made).toEqual(['a on nothing', 'a again']);
    const latest = await store.latest();
    expect(outcome.published).toMatchObject({ id: latest?.id, publisher: 'a' });
    expect(outcome.published?.base).toBe((latest?.id as number) - 1);
    expect(installedPublication(workDirOf(dbA))).toBe(latest?.id);
  } finally {
    await store.close();
  }
});

it('a round reads each submission once when their transaction ids span a power of ten (xid order, not text order)', async () => {
  const url = await freshDatabase();
  const store = await GenerationStore.open(url);
  const observations = await PgObservationStore.open(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Four submissions of one token placing known cell 1 in Sydney, stored as a server stores
    // them, then dated to finished transactions 98 to 101 (initdb's own ids pass a thousand):
    // ordered as text, '100' and '101' would come before '98' and '99'.
    const parsed = parseRequest({ token: 'x', cells: [fixtureCell(1)] }, { requireToken: true });
    if (!parsed.ok) throw new Error(parsed.message);
    const ids: number[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        await observations.add({
          receivedAt: T0 + i * 60_000,
          token: 'attacker',
          deviceId: `dev${i}`,
          gps: [{ lat: -33.8688, lon: 151.2093, accuracy: 10, timestamp: T0 + i * 60_000 }],
          cells: parsed.request.cells,
          wifi: [],
        }),
      );
    const txs = ['98', '99', '100', '101'];
    for (let i = 0; i < 4; i++)
      await client.query('UPDATE observations SET tx = $1::xid8 WHERE id = $2', [txs[i], ids[i]]);

    const all = await store.submissionsAfter({ tx: '0', id: 0 }, 10);
    expect(all.submissions.map((s) => s.receivedAt)).toEqual([0, 1, 2, 3].map((i) => T0 + i * 60_000));
    expect(all.cursor).toEqual({ tx: '101', id: ids[3] });
    expect((await store.submissionsAfter(all.cursor, 10)).submissions).toEqual([]);
    const firstTwo = await store.submissionsAfter({ tx: '0', id: 0 }, 2);
    expect(firstTwo.cursor).toEqual({ tx: '99', id: ids[1] });
    expect((await store.submissionsAfter(firstTwo.cursor, 10)).submissions).toHaveLength(2);

    // Through rounds: the first folds the four, the next finds nothing new, the ledger counts four.
    const db = fixtureDb();
    const options = { store, seed: db, work: workDirOf(db), publisher: 'test' };
    expect(await updateShared(options, foldSubmissions(store))).toMatchObject({ observations: 4 });
    const again = await updateShared(options, foldSubmissions(store));
    expect(again).toMatchObject({ observations: 0 });
    expect(again.published).toBeUndefined();
    const listed = cli(['learn', '--db', workDirOf(db), '--contributions']);
    expect(listed.code, listed.stderr).toBe(0);
    const entry = (JSON.parse(listed.stdout) as Record<string, unknown>[]).find(
      (c) => c.token === tokenHash('attacker').slice(0, 16),
    );
    expect(entry).toMatchObject({ sightings: 4, far: 4 });
  } finally {
    await client.end();
    await observations.close();
    await store.close();
  }
});
