/**
 * The demo page (web/, src/server/demo.ts) and demo mode of `whereabouts serve` (no --db): the
 * page and MapLibre are served by the server itself, nothing in the page points elsewhere, and a
 * demo key is created in the user's data directory on the first start and kept after.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Basemap } from '../src/maps/basemap.js';
import { cli, fixtureDb, root, startServe, startTestServer, type TestServer } from './helpers.js';
import { tempDir } from './temp-dirs.js';

let server: TestServer;
let bare: TestServer;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startTestServer({ engine: { db: fixtureDb() }, maps: { basemap: Basemap.open() } });
  bare = await startTestServer({ engine: { db: fixtureDb() } });
});

afterAll(async () => {
  await server?.close();
  await bare?.close();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('the demo page', () => {
  it('is served at / and /demo with MapLibre from this server', async () => {
    for (const path of ['/', '/demo']) {
      const r = await fetch(`${server.base}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await r.text();
      expect(html).toContain('/demo/maplibre-gl.js');
      expect(html).not.toMatch(/https?:\/\//);
    }
    for (const [path, type] of [
      ['/demo/maplibre-gl.js', 'text/javascript'],
      ['/demo/maplibre-gl.css', 'text/css'],
      ['/demo/demo.js', 'text/javascript'],
      ['/demo/demo.css', 'text/css'],
    ]) {
      const r = await fetch(`${server.base}${path}`);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type')).toContain(type);
    }
    const js = readFileSync(join(root, 'web', 'demo.js'), 'utf8');
    expect(js).not.toMatch(/https?:\/\//);
  });

  it('is absent without map routes', async () => {
    expect((await fetch(`${bare.base}/`)).status).toBe(404);
  });
});

describe('serve without --db', () => {
  it('uses the demo database, creates a demo key once, and serves the page, maps and /process', async () => {
    const home = tempDir('wb-xdg-');
    const env = { ...process.env, XDG_DATA_HOME: home };
    const first = await startServe(['--workers', '1'], env);
    children.push(first.child);
    const keyFile = join(home, 'whereabouts', 'demo-key');
    const key = readFileSync(keyFile, 'utf8').trim();
    expect(key.length).toBeGreaterThan(10);
    const base = `http://127.0.0.1:${first.port}`;
    expect((await fetch(`${base}/`)).status).toBe(200);
    const request = JSON.parse(
      readFileSync(join(root, 'data', 'demo-requests.jsonl'), 'utf8').split('\n')[0] as string,
    );
    const located = await (
      await fetch(`${base}/v2/process`, { method: 'POST', body: JSON.stringify({ ...request, token: key }) })
    ).json();
    expect(located).toMatchObject({ status: 'ok' });
    const image = await fetch(`${base}/v3/staticmap?key=${key}&center=52.08,4.28&zoom=10&size=64x64`);
    expect(image.status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const again = await startServe(['--workers', '1'], env);
    children.push(again.child);
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(key);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 60_000);
});

describe("the README's quick start", () => {
  it('shows the first answer `locate --jsonl data/demo-requests.jsonl` prints', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8').split('\n');
    const at = readme.findIndex((l) => l.includes('whereabouts locate --jsonl data/demo-requests.jsonl'));
    expect(at, 'the quick start runs locate on the demo requests').toBeGreaterThanOrEqual(0);
    const r = cli(['locate', '--jsonl', join(root, 'data', 'demo-requests.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    const first = r.stdout.split('\n')[0] as string;
    expect(JSON.parse(readme[at + 1] as string)).toEqual(JSON.parse(first));
  });
});
