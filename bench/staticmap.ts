/**
 * Static map images: ours (`renderStaticMap` of `whereabouts/maps`: the core draws the view from
 * the vector tiles, then paths and markers) beside the `staticmaps` npm package drawing the same
 * image from this server's own raster tiles (`whereabouts serve` on 127.0.0.1, cached after the
 * first round) with sharp, alternated in one process. Two images:
 *  - 640 x 480 with 10 markers and a 200-point path;
 *  - 1280 x 1280 at scale 2 (2560 x 2560 pixels: 512 px tiles for staticmaps).
 * Then static images per second over HTTP (`/v3/staticmap`, wrk where installed, else autocannon).
 *
 *   npx tsx bench/staticmap.ts [--rounds N] [--duration S] [--keep DIR]
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Basemap, renderStaticMap } from '../src/maps/index.js';
import { autocannon, serveDemoWithKey } from './load.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '15' },
    duration: { type: 'string', default: '6' },
    keep: { type: 'string' },
  },
});
const rounds = Number(values.rounds);

interface StaticMapsImage {
  addMarker(m: {
    img: string;
    coord: [number, number];
    width: number;
    height: number;
    offsetX: number;
    offsetY: number;
  }): void;
  addLine(l: { coords: [number, number][]; color: string; width: number }): void;
  render(center?: [number, number], zoom?: number): Promise<void>;
  image: { buffer(type: string): Promise<Buffer> };
}
const require = createRequire(import.meta.url);
const StaticMaps = require('staticmaps') as new (options: Record<string, unknown>) => StaticMapsImage;
const sharp = require('sharp') as (input: Buffer | object) => { png(): { toBuffer(): Promise<Buffer> } };

const { served, key, store } = await serveDemoWithKey('static', '2');

// staticmaps draws a marker from an image file: a red 22 x 22 pin-like dot
const markerFile = join(store, 'marker.png');
writeFileSync(
  markerFile,
  await sharp(
    Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="22" height="22"><circle cx="11" cy="11" r="9" fill="#e53935" stroke="#fff" stroke-width="2"/></svg>',
    ),
  )
    .png()
    .toBuffer(),
);

const CENTER: [number, number] = [52.08, 4.3];
const ZOOM = 12;
const markers: [number, number][] = Array.from({ length: 10 }, (_, i) => [
  52.05 + 0.006 * i,
  4.24 + 0.011 * ((i * 7) % 10),
]);
const path: [number, number][] = Array.from({ length: 200 }, (_, i) => [
  52.05 + 0.06 * (i / 199),
  4.22 + 0.16 * (i / 199) + 0.01 * Math.sin(i / 6),
]);

interface Case {
  name: string;
  ours: () => Promise<Buffer>;
  theirs: () => Promise<Buffer>;
}

const basemap = Basemap.open();
const cases: Case[] = [
  {
    name: '640x480, 10 markers, 200-point path',
    ours: async () =>
      (
        await renderStaticMap(
          {
            center: CENTER.join(','),
            zoom: ZOOM,
            size: '640x480',
            markers: `color:red|${markers.map((m) => m.join(',')).join('|')}`,
            path: `weight:3|color:0x1e88e5|${path.map((p) => p.map((v) => v.toFixed(5)).join(',')).join('|')}`,
          },
          { basemap },
        )
      ).body,
    theirs: async () => {
      const map = new StaticMaps({
        width: 640,
        height: 480,
        tileUrl: `${served.url}/v3/streets/r/{z}/{x}/{y}.png?key=${key}`,
        tileRequestLimit: 8,
      });
      map.addLine({ coords: path.map(([la, lo]) => [lo, la]), color: '#1e88e5', width: 3 });
      for (const [la, lo] of markers) {
        map.addMarker({ img: markerFile, coord: [lo, la], width: 22, height: 22, offsetX: 11, offsetY: 11 });
      }
      await map.render([CENTER[1], CENTER[0]], ZOOM);
      return map.image.buffer('image/png');
    },
  },
  {
    name: '1280x1280 at scale 2 (2560 x 2560 px)',
    ours: async () =>
      (
        await renderStaticMap(
          { center: CENTER.join(','), zoom: ZOOM, size: '1280x1280', scale: 2 },
          { basemap },
        )
      ).body,
    theirs: async () => {
      const map = new StaticMaps({
        width: 2560,
        height: 2560,
        tileSize: 512,
        tileUrl: `${served.url}/v3/streets/r/{z}/{x}/{y}@2x.png?key=${key}`,
        tileRequestLimit: 8,
      });
      await map.render([CENTER[1], CENTER[0]], ZOOM);
      return map.image.buffer('image/png');
    },
  },
];

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};

try {
  for (const c of cases) {
    // first round untimed: the server's raster tiles and our styles are made once; its images
    // are kept for a look (`--keep DIR`)
    const first = [await c.ours(), await c.theirs()];
    if (values.keep !== undefined) {
      const name = c.name.split(' ')[0] as string;
      writeFileSync(join(values.keep, `${name}-ours.png`), first[0] as Buffer);
      writeFileSync(join(values.keep, `${name}-staticmaps.png`), first[1] as Buffer);
    }
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      let t = performance.now();
      await c.ours();
      ours.push(performance.now() - t);
      t = performance.now();
      await c.theirs();
      theirs.push(performance.now() - t);
    }
    const p50 = quantile(ours, 0.5);
    const p50t = quantile(theirs, 0.5);
    console.log(
      `${c.name}: ours p50 ${p50.toFixed(1)} ms, p99 ${quantile(ours, 0.99).toFixed(1)} ms; ` +
        `staticmaps p50 ${p50t.toFixed(1)} ms, p99 ${quantile(theirs, 0.99).toFixed(1)} ms; ` +
        `ours ${(p50t / p50).toFixed(1)}x faster at the p50 (${rounds} rounds, alternated)`,
    );
  }

  // Where the 640 x 480 image's time goes: the map alone, the map with the overlays, and the
  // same as JPEG (the core renders, draws and encodes in one call, timed from outside).
  const spec = {
    center: CENTER.join(','),
    zoom: ZOOM,
    size: '640x480',
    markers: `color:red|${markers.map((m) => m.join(',')).join('|')}`,
    path: `weight:3|color:0x1e88e5|${path.map((p) => p.map((v) => v.toFixed(5)).join(',')).join('|')}`,
  };
  const parts = { map: [] as number[], overlays: [] as number[], jpeg: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    await renderStaticMap({ center: spec.center, zoom: spec.zoom, size: spec.size }, { basemap });
    parts.map.push(performance.now() - t);
    t = performance.now();
    await renderStaticMap(spec, { basemap });
    parts.overlays.push(performance.now() - t);
    t = performance.now();
    await renderStaticMap({ ...spec, format: 'jpg' }, { basemap });
    parts.jpeg.push(performance.now() - t);
  }
  const m = quantile(parts.map, 0.5);
  const o = quantile(parts.overlays, 0.5);
  console.log(
    `640x480 parts (p50): map and PNG ${m.toFixed(1)} ms; with 10 markers and the path ${o.toFixed(1)} ms ` +
      `(overlays ${(((o - m) / o) * 100).toFixed(0)}% of the image); as JPEG ${quantile(parts.jpeg, 0.5).toFixed(1)} ms`,
  );

  const url = `/v3/staticmap?key=${key}&center=${CENTER.join(',')}&zoom=${ZOOM}&size=640x480&markers=${encodeURIComponent(
    `color:red|${markers.map((m) => m.join(',')).join('|')}`,
  )}`;
  const duration = Number(values.duration);
  if (spawnSync('wrk', ['--version']).error === undefined) {
    const out = spawnSync('wrk', ['-t2', '-c16', `-d${duration}s`, `${served.url}${url}`], {
      encoding: 'utf8',
    });
    const rate = /Requests\/sec:\s+(\S+)/.exec(out.stdout)?.[1];
    console.log(`/v3/staticmap 640x480 with 10 markers over HTTP (wrk, 16 connections): ${rate} images/s`);
  } else {
    const res = await autocannon({ url: `${served.url}${url}`, connections: 16, duration });
    console.log(
      `/v3/staticmap 640x480 with 10 markers over HTTP (autocannon): ${res.requests.average} images/s`,
    );
  }
} finally {
  try {
    process.kill(-(served.child.pid as number), 'SIGKILL');
  } catch {
    // already gone
  }
  rmSync(store, { recursive: true, force: true });
}
