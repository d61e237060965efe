/**
 * The demo page in a real browser: headless Chromium (Debian's `chromium`) driven by
 * puppeteer-core loads the page with a key, draws the map with WebGL (SwiftShader), logs no
 * console errors and sends no request anywhere but this server. The screenshot is kept in
 * test-artifacts/ (gitignored). Fails, not skips, when Chromium is missing: `.ci/run` installs it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pixelmatch from 'pixelmatch';
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

/**
 * Mismatched pixels allowed between the browser's vector map and the server's raster tiles
 * (pixelmatch, threshold 0.1). Measured: 5.4% (label glyphs and line antialiasing differ); the
 * same view from the dark theme's tiles: 93%. It catches a wrong theme, missing layers or a
 * misplaced view, not a slight shift of colour (the light theme's tiles also measured 5.4%).
 */
const MAX_MISMATCH_SHARE = 0.08;

it('the browser draws the vector style as the server draws its raster tiles (pixelmatch)', async () => {
  if (!browser) throw new Error('the browser of the demo-page test did not start');
  const page = await browser.newPage();
  await page.setViewport({ width: 512, height: 512 });
  const key = server.tokens.create({}).token;
  // A view of exactly the 256 px raster tiles z4 x8-9 y4-5 (Western Europe): MapLibre counts
  // zoom for 512 px tiles, so its zoom 3 is their zoom 4; the centre is their shared corner.
  const n = 2 ** 4;
  const lon = (9 / n) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * 5) / n))) * 180) / Math.PI;
  await page.goto(`${server.base}/demo/maplibre-gl.css?key=${key}`);
  await page.setContent(
    `<!doctype html><html><head><style>html,body,#m{margin:0;width:512px;height:512px}</style>
     <script src="${server.base}/demo/maplibre-gl.js"></script></head><body><div id="m"></div>
     <script>
       window.map = new maplibregl.Map({ container: 'm', style: '${server.base}/v3/streets/vector.json?key=${key}',
         center: [${lon}, ${lat}], zoom: 3, interactive: false, fadeDuration: 0, attributionControl: false });
     </script></body></html>`,
    { waitUntil: 'load' },
  );
  await page.waitForFunction(
    () => {
      const map = (window as unknown as { map?: { loaded(): boolean; areTilesLoaded(): boolean } }).map;
      return map?.loaded() && map.areTilesLoaded();
    },
    { timeout: 30_000 },
  );
  await new Promise((r) => setTimeout(r, 500));
  const shot = Buffer.from(await page.screenshot({ type: 'png' }));
  const vector = decodePng(shot);

  // The same view from the raster tiles, the four laid side by side.
  const raster = new Uint8Array(512 * 512 * 4);
  for (const [dx, dy] of [
    [0, 0],
    [1, 0],
    [0, 1],
    [1, 1],
  ] as const) {
    const r = await fetch(`${server.base}/v3/streets/r/4/${8 + dx}/${4 + dy}.png?key=${key}`);
    const tile = decodePng(Buffer.from(await r.arrayBuffer()));
    for (let y = 0; y < 256; y++) {
      const from = y * 256 * 4;
      raster.set(tile.rgba.subarray(from, from + 256 * 4), ((dy * 256 + y) * 512 + dx * 256) * 4);
    }
  }
  const diff = new Uint8Array(512 * 512 * 4);
  const mismatched = pixelmatch(vector.rgba, raster, diff, 512, 512, { threshold: 0.1 });
  const dir = join(root, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'vector-view.png'), shot);
  writeFileSync(
    join(dir, 'vector-vs-raster.json'),
    JSON.stringify({ mismatched, share: mismatched / 512 ** 2 }),
  );
  expect(vector.width).toBe(512);
  expect(mismatched / 512 ** 2).toBeLessThan(MAX_MISMATCH_SHARE);
}, 90_000);
