/**
 * The demo page in a real browser: headless Chromium (Debian's `chromium`) driven by
 * puppeteer-core loads the page with a key, draws the map with WebGL (SwiftShader), logs no
 * console errors and sends no request anywhere but this server. The screenshot is kept in
 * test-artifacts/ (gitignored). Fails, not skips, when Chromium is missing: `.ci/run` installs it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Basemap } from '../src/maps/basemap.js';
import { root, startTestServer, type TestServer } from './helpers.js';
import { decodePng } from './png.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let server: TestServer;
let browser: Browser | undefined;

beforeAll(async () => {
  // The embedded demo database: the page's sample /process request is answered from it.
  server = await startTestServer({ engine: {}, maps: { basemap: Basemap.open() } });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

it('the demo page draws the map and a /process answer, with no console errors and no request leaving 127.0.0.1', async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
      '--disable-background-networking',
    ],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  const errors: string[] = [];
  const outside: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => {
    const url = new URL(r.url());
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '127.0.0.1')
      outside.push(r.url());
  });
  const key = server.tokens.create({}).token;
  await page.goto(`${server.base}/?key=${key}`, { waitUntil: 'load' });
  await page.waitForFunction(
    () => {
      const map = (window as unknown as { whereaboutsMap?: { loaded(): boolean; areTilesLoaded(): boolean } })
        .whereaboutsMap;
      return map?.loaded() && map.areTilesLoaded();
    },
    { timeout: 30_000 },
  );
  // One more frame for the tiles just loaded to be drawn.
  await new Promise((r) => setTimeout(r, 500));
  const mapElement = await page.$('#map');
  if (!mapElement) throw new Error('no #map element');
  const shot = Buffer.from(await mapElement.screenshot({ type: 'png' }));
  const dir = join(root, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'demo-page.png'), shot);

  const img = decodePng(shot);
  const colours = new Set<number>();
  const step = 4 * 7;
  for (let i = 0; i < img.rgba.length; i += step) {
    colours.add(
      ((img.rgba[i] as number) << 16) | ((img.rgba[i + 1] as number) << 8) | (img.rgba[i + 2] as number),
    );
  }
  // Land, water, borders and labels: far more than a blank or single-colour canvas.
  expect(colours.size).toBeGreaterThan(50);

  // The sample /process request: its answer is written out and drawn.
  await page.click('#locate');
  await page.waitForFunction(() => document.getElementById('answer')?.textContent?.includes('±'), {
    timeout: 15_000,
  });
  expect(await page.$eval('#answer', (el) => el.textContent)).toMatch(/The Hague/);
  expect(await page.$('.maplibregl-marker')).not.toBeNull();
  expect(await page.$eval('#static-link', (el) => el.textContent)).toMatch(/\/v3\/staticmap\?key=/);
  expect(errors).toEqual([]);
  expect(outside).toEqual([]);
}, 90_000);
