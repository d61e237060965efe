/**
 * The real `whereabouts serve` (built CLI, node:cluster with 2 workers): it answers, and on
 * SIGTERM it finishes what it accepted, charges exactly what it answered, and exits 0.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { TokenStore } from '../src/tokens/index.js';
import { cli, fixtureDb, startServe } from './helpers.js';

let child: ChildProcess | undefined;

afterAll(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

it('serves with 2 workers, then shuts down cleanly on SIGTERM, charging exactly the answers', async () => {
  const db = fixtureDb();
  const created = cli(['token', 'create', '--db', db, '--geolocation', '1000']);
  expect(created.code).toBe(0);
  const token = (JSON.parse(created.stdout) as { token: string }).token;

  const serve = await startServe(['--db', db, '--workers', '2', '--health-detail']);
  child = serve.child;
  const { port, exited } = serve;
  const url = `http://127.0.0.1:${port}`;
  const body = JSON.stringify({ token, cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }] });
  const post = () =>
    fetch(`${url}/v2/process.php`, { method: 'POST', body }).then(
      async (r) => (await r.json()) as { status: string; balance: number },
    );

  const first = await post();
  expect(first).toMatchObject({ status: 'ok', balance: 999 });
  const health = (await (await fetch(`${url}/health`)).json()) as { status: string; db: { cells: number } };
  expect(health).toMatchObject({ status: 'ok', db: { cells: expect.any(Number) } });

  // Requests in flight while SIGTERM arrives: each either completes (and is charged once) or is
  // refused without a charge; none is charged without its answer.
  const inFlight = Array.from({ length: 40 }, () => post());
  child?.kill('SIGTERM');
  const settled = await Promise.allSettled(inFlight);
  expect(await exited).toBe(0);

  const ok = settled.filter((s) => s.status === 'fulfilled' && s.value.status === 'ok').length;
  const tokens = TokenStore.open(db);
  try {
    expect(1000 - tokens.balance(token, 'geolocation')).toBe(1 + ok);
  } finally {
    tokens.close();
  }
});

it('gives up after three workers in a row fail to start, naming the reason, and exits 1', () => {
  const db = fixtureDb();
  writeFileSync(join(db, 'manifest.json'), '{broken');
  const r = cli(['serve', '--db', db, '--workers', '2', '--port', '0', '--log-level', 'warn']);
  expect(r.code).toBe(1);
  const failed = r.stdout
    .split('\n')
    .filter((l) => l.includes('"worker failed to start"'))
    .map((l) => JSON.parse(l) as { error: string; attempt: number });
  expect(failed.map((f) => f.attempt)).toEqual([1, 2, 3]);
  for (const f of failed) expect(f.error).toMatch(/corrupt station database: .*manifest\.json/);
  expect(r.stderr).toMatch(/whereabouts: corrupt station database/);
});

it('refuses to start on a missing or damaged tileset, naming it', () => {
  const db = fixtureDb();
  const missing = cli([
    'serve',
    '--db',
    db,
    '--workers',
    '0',
    '--port',
    '0',
    '--tiles',
    '/nonexistent.mbtiles',
  ]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/tileset \/nonexistent\.mbtiles: no such file/);
  const junk = join(db, 'junk.mbtiles');
  writeFileSync(junk, 'not a database');
  const damaged = cli(['serve', '--db', db, '--workers', '0', '--port', '0', '--tiles', junk]);
  expect(damaged.code).toBe(1);
  expect(damaged.stderr).toMatch(/junk\.mbtiles: not a readable MBTiles file/);
});

it('token create --service maps makes a key the map routes accept', async () => {
  const db = fixtureDb();
  const created = cli(['token', 'create', '--db', db, '--service', 'maps']);
  expect(created.code).toBe(0);
  const record = JSON.parse(created.stdout) as { token: string; services: string[] };
  expect(record.services).toEqual(['maps']);
  const serve = await startServe(['--db', db, '--workers', '0', '--public-url', 'https://maps.example.com']);
  child = serve.child;
  try {
    const r = await fetch(`http://127.0.0.1:${serve.port}/v3/streets/raster.json?key=${record.token}`);
    expect(r.status).toBe(200);
    const style = (await r.json()) as { sources: { basemap: { tiles: string[] } } };
    expect(style.sources.basemap.tiles[0]).toBe(
      `https://maps.example.com/v3/streets/r/{z}/{x}/{y}.png?key=${record.token}`,
    );
  } finally {
    child.kill('SIGTERM');
    await serve.exited;
  }
});
