/**
 * The geocoding files (timezones, places with their country polygons, search) are checked by
 * their header at `Engine.open` and read whole on first use (crates/whereabouts-core/src/lazy_file.rs):
 * a foreign or truncated file is refused at open; a file whose body is damaged opens, and the
 * first call that needs it fails with a clear error, every later call with the same one; the
 * `prepare*` methods a server calls at start find it too. The same in the core, with racing
 * first uses read once: crates/whereabouts-core/src/lazy_file.rs and tests/lazy_file.rs.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { placesFile, searchFile, timezonesFile } from '../src/data-files.js';
import { Engine, type EngineOptions } from '../src/engine.js';
import { startTestServer } from './helpers.js';
import { tempDir } from './temp-dirs.js';

const dir = tempDir('wb-geodata-');

/** A copy of `file` with one byte of its body flipped: the header is sound, the checksum is not. */
function damaged(file: string): string {
  const bytes = readFileSync(file);
  const at = bytes.length >> 1;
  bytes[at] = (bytes[at] as number) ^ 0x10;
  const out = join(dir, `damaged-${file.split('/').pop()}`);
  writeFileSync(out, bytes);
  return out;
}

/** A copy of `file` without its last 8 bytes. */
function truncated(file: string): string {
  const bytes = readFileSync(file);
  const out = join(dir, `truncated-${file.split('/').pop()}`);
  writeFileSync(out, bytes.subarray(0, bytes.length - 8));
  return out;
}

/** `s` matched literally in a RegExp. */
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const only: EngineOptions = {
  timezones: false,
  places: false,
  search: false,
  land: false,
  ipDatabases: false,
};

const kinds = [
  {
    name: 'timezones',
    file: timezonesFile,
    options: (f: string): EngineOptions => ({ ...only, timezones: f }),
    corrupt: /polygon index is corrupt/,
    use: (e: Engine) => e.timezone({ lat: 48.85, lon: 2.35 }),
    prepare: (e: Engine) => e.prepareTimezones(),
  },
  {
    name: 'places',
    file: placesFile,
    options: (f: string): EngineOptions => ({ ...only, places: f }),
    corrupt: /places file is corrupt/,
    use: (e: Engine) => e.reverse({ lat: 48.85, lon: 2.35, zoom: 18 }),
    prepare: (e: Engine) => e.prepareReverse(),
  },
  {
    name: 'search',
    file: searchFile,
    options: (f: string): EngineOptions => ({ ...only, search: f }),
    corrupt: /search file is corrupt/,
    use: (e: Engine) => e.search({ q: 'paris' }),
    prepare: (e: Engine) => e.prepareSearch(),
  },
];

describe.each(kinds)('the $name file', ({ file, options, corrupt, use, prepare }) => {
  it('is refused at open when foreign or truncated', async () => {
    await expect(Engine.open(options(import.meta.filename))).rejects.toThrow(corrupt);
    await expect(Engine.open(options(truncated(file)))).rejects.toThrow(corrupt);
    await expect(Engine.open(options(join(dir, 'missing.bin')))).rejects.toThrow(/ENOENT|No such file/);
  });

  it('opens with a damaged body, which the first use refuses clearly, and every later one', async () => {
    const path = damaged(file);
    const e = await Engine.open(options(path));
    const message = new RegExp(`${corrupt.source}: checksum mismatch \\(${literal(path)}\\)`);
    expect(() => use(e)).toThrow(message);
    expect(() => use(e)).toThrow(message);
    expect(() => prepare(e)).toThrow(message);
    e.close();
    const server = await Engine.open(options(path));
    expect(() => prepare(server)).toThrow(message);
    server.close();
  });

  it('is read on first use and answers as one read at open would', async () => {
    const copy = join(dir, `sound-${file.split('/').pop()}`);
    copyFileSync(file, copy);
    const lazy = await Engine.open(options(copy));
    const prepared = await Engine.open(options(copy));
    prepare(prepared);
    expect(use(lazy)).toEqual(use(prepared));
    expect((use(lazy) as { status: string }).status).toBe('ok');
    lazy.close();
    prepared.close();
  });
});

describe('a server over a damaged places file (not prepared)', () => {
  it('answers UNKNOWN_ERROR with status 500, and serves on', async () => {
    const server = await startTestServer({ engine: { ...only, places: damaged(placesFile) } });
    try {
      const token = server.tokens.create({ geocodingPerDay: 10 }).token;
      for (let i = 0; i < 2; i++) {
        const r = await server.get(`/v2/reverse?token=${token}&lat=48.85&lon=2.35`);
        expect(r).toMatchObject({ status: 500, body: { status: 'error', message: 'UNKNOWN_ERROR' } });
      }
      expect((await server.get(`/v2/balance?token=${token}`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
