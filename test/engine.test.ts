import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../src/index.js';
import { parseRequest } from '../src/locating/request/index.js';
import { native } from '../src/native/binding.js';
import { WireBuffers } from '../src/native/wire.js';
import { fixtureCell, fixtureDb } from './helpers.js';
import { tempDir } from './temp-dirs.js';

const NOW = 1_700_000_000;
let db: string;
let engine: Engine;

beforeAll(async () => {
  db = fixtureDb();
  engine = await Engine.open({ db, now: NOW });
});
afterAll(() => engine.close());

describe('Engine.process', () => {
  it('answers a known cell with the spec response shape', () => {
    const r = engine.process({ token: 't', cells: [fixtureCell(1)], address: 0 });
    // A crowd cell: 1000 m range x sqrt(1.15^2 + 1.1^2 / 20^1.5 samples): docs/positioning.md
    expect(r).toEqual({ status: 'ok', lat: 52.5, lon: 13.4, accuracy: 1002 });
  });

  it('includes the address text by default (spec default address=1), and its components with address=2', () => {
    const r = engine.process({ cells: [fixtureCell(1)] });
    // The fixture cell is in central Berlin.
    expect(r.address).toMatch(/^Berlin, .*Germany$/);
    expect(r.address_details).toBeUndefined();
    const details = engine.process({ cells: [fixtureCell(1)], address: 2 });
    expect(details.address).toBe(r.address);
    expect(details.address_details).toMatchObject({ city: 'Berlin', country: 'Germany', country_code: 'de' });
    // accept-language applies to the country name.
    expect(engine.process({ cells: [fixtureCell(1)], 'accept-language': 'fr' }).address).toMatch(
      /Allemagne$/,
    );
  });

  it('says Not available when no place is near the answer', async () => {
    // The fixture cell 262/1/40/1 is in the mid-Atlantic; without land data it stays there.
    const atSea = await Engine.open({ db, now: NOW, land: false });
    const r = atSea.process({ cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 40, cid: 1 }] });
    atSea.close();
    expect(r.status).toBe('ok');
    expect(r.address).toBe('Not available');
  });

  it('prefers WiFi that agrees with the cells', () => {
    const r = engine.process({
      cells: [fixtureCell(1)],
      wifi: [
        { bssid: '00:11:22:33:44:01', signal: -60 },
        { bssid: '001122334402', signal: -60 },
        { bssid: '0011.2233.4403', signal: -60 },
      ],
      address: 0,
    });
    expect(r.status).toBe('ok');
    expect(r.accuracy).toBeLessThan(100);
    expect(r.lat).toBeCloseTo(52.5002, 3);
  });

  it('falls back to the LAC area for an unknown cell, marked lacf and aged', () => {
    const r = engine.process({ cells: [fixtureCell(777)], address: 0 });
    expect(r.status).toBe('ok');
    expect(r.fallback).toBe('lacf');
    expect(r.aged).toBe(true);
  });

  it('uses the short CID fallback for a 16-bit id of a 28-bit LTE cell', () => {
    // 27443140 = 0x1A2BFC4: its low 16 bits are 0xBFC4 = 49092
    const r = engine.process({
      cells: [{ radio: 'lte', mcc: 262, mnc: 1, lac: 20, cid: 49092 }],
      address: 0,
    });
    expect(r.fallback).toBe('scf');
    expect(r.lat).toBeCloseTo(48.14, 3);
  });

  it('says No matches found when nothing is known', () => {
    const r = engine.process({ cells: [{ ...fixtureCell(5), lac: 11 }] });
    expect(r).toEqual({ status: 'error', message: 'No matches found' });
  });

  it('returns the spec errors for bad requests, never throws', () => {
    expect(engine.process({ cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10 }] }).message).toBe(
      'No cell ID provided',
    );
    expect(engine.process({ cells: [{ radio: 'gsm', mnc: 1, lac: 10, cid: 1 }] }).message).toBe(
      'No country code provided',
    );
    expect(engine.process({ cells: [fixtureCell(1, { mcc: 1000 })] }).message).toBe(
      'Invalid country code (mcc)',
    );
    expect(engine.process({}).message).toBe('No network data provided');
    expect(engine.process(null).message).toBe('Invalid request');
    expect(engine.process('{"cells": [01]}').message).toBe('Invalid request');
  });

  it('answers a batch exactly as one request at a time', () => {
    const reqs = [
      { cells: [fixtureCell(1)] },
      { cells: [fixtureCell(2)] },
      { bad: true },
      { cells: [fixtureCell(777)] },
      42,
    ];
    expect(engine.processBatch(reqs)).toEqual(reqs.map((r) => engine.process(r)));
  });

  it('answers a long mixed batch exactly as one request at a time, IP fallbacks included', () => {
    // Several chunks and a grown wire buffer; IP requests between others, so that a wrong
    // IP index would answer from another country.
    const ips = ['8.8.8.8', '81.2.69.142', '1.1.1.1', '194.25.0.60'];
    const variants = (i: number): unknown => {
      switch (i % 5) {
        case 0:
          return { ip: ips[i % ips.length], fallbacks: { ipf: 1 }, address: 0 };
        case 1:
          return {
            cells: [fixtureCell(1), fixtureCell(2), fixtureCell(3)],
            ip: ips[(i + 1) % ips.length],
            address: 0,
          };
        case 2:
          return { cells: [fixtureCell(i)], address: 0 };
        case 3:
          return { bad: i };
        default:
          return {
            ip: ips[(i + 2) % ips.length],
            fallbacks: { ipf: 1 },
            cells: [fixtureCell(777)],
            address: 0,
          };
      }
    };
    const reqs = Array.from({ length: 700 }, (_, i) => variants(i));
    const batch = engine.processBatch(reqs);
    expect(batch).toEqual(reqs.map((r) => engine.process(r)));
    expect(new Set(batch.filter((r) => r.fallback === 'ipf').map((r) => r.lat)).size).toBe(ips.length);
  });

  it('omits location when geolocation is 0', () => {
    expect(engine.process({ cells: [fixtureCell(1)], geolocation: 0 })).toEqual({ status: 'ok' });
  });

  it('applies the IP fallback only when ipf is on', () => {
    const off = engine.process({
      ip: '8.8.8.8',
      fallbacks: { ipf: 0 },
      cells: [{ ...fixtureCell(5), lac: 11 }],
    });
    expect(off.status).toBe('error');
    const on = engine.process({ ip: '8.8.8.8', fallbacks: { ipf: 1 }, address: 0 });
    expect(on.status).toBe('ok');
    expect(on.fallback).toBe('ipf');
    // 8.8.8.8 is registered in the United States: the answer lies in North America.
    expect(on.lat).toBeGreaterThan(24);
    expect(on.lon).toBeLessThan(-66);
    expect(on.accuracy).toBeGreaterThan(100_000);
    // A country-wide answer gets a country-wide address, not the town nearest its centre.
    expect(engine.process({ ip: '8.8.8.8', fallbacks: { ipf: 1 } }).address).toBe('United States');
  });
});

describe('Engine.processBatch', () => {
  it('answers as process does, also when a chunk outgrows the wire buffer', () => {
    // 7 cells and 15 access points: 115 numbers a request, so 64 of them pass the buffer's
    // first 4,096 numbers and it grows with requests already encoded in it
    const big = (k: number) => ({
      cells: [1, 2, 3, 4, 5, 6, 7].map((cid) => fixtureCell(k % 3 === 0 ? cid : 1000 + cid)),
      wifi: Array.from({ length: 15 }, (_, i) => ({
        bssid: `00:11:22:33:44:${(i < 3 && k % 2 === 0 ? i + 1 : 0x20 + i).toString(16).padStart(2, '0')}`,
        signal: -60 - i,
      })),
      address: 0,
    });
    const requests = Array.from({ length: 150 }, (_, k) => (k % 10 === 9 ? { wifi: 'x' } : big(k)));
    const one = requests.map((r) => engine.process(r));
    expect(new Set(one.map((r) => JSON.stringify(r))).size).toBeGreaterThan(2);
    expect(engine.processBatch(requests)).toEqual(one);
  });
});

describe('processBatch on several threads', () => {
  it('answers exactly as on one thread and as process, over chunks of several threads', async () => {
    const threaded = await Engine.open({ db, now: NOW, batchThreads: 3 });
    const single = await Engine.open({ db, now: NOW, batchThreads: 1 });
    try {
      // 5,000 requests: a threaded batch reads chunks of 64, 128, then 256 while the batch
      // threads solve the chunk before, so many chunks in flight and a short last one; invalid
      // and unanswerable requests among them, a chunk with no valid request at all (448 to
      // 703), requests with an IP (the wire's list of them differs from chunk to chunk),
      // different answers
      const requests = Array.from({ length: 5000 }, (_, k) => {
        if (k % 17 === 0 || (k >= 448 && k < 704)) return { bad: k };
        if (k % 13 === 0) return { ip: '8.8.8.8', fallbacks: { ipf: 1 } };
        return { cells: [fixtureCell(1 + (k % 9)), fixtureCell(1 + ((k * 7) % 11))], address: 0 };
      });
      const alone = requests.map((r) => single.process(r));
      expect(new Set(alone.map((r) => JSON.stringify(r))).size).toBeGreaterThan(10);
      expect(threaded.processBatch(requests)).toEqual(alone);
      expect(single.processBatch(requests)).toEqual(alone);
    } finally {
      threaded.close();
      single.close();
    }
  });

  it('says the engine is closed when a request closes it in the middle of a threaded batch', async () => {
    const threaded = await Engine.open({ db, now: NOW, batchThreads: 2 });
    const request = { cells: [fixtureCell(1)], address: 0 };
    const closing = {
      get cells() {
        threaded.close();
        return request.cells;
      },
    };
    // chunks of 64, 128 and 256: the second is being solved when the third's 109th request
    // closes the engine
    const requests = Array.from({ length: 600 }, (_, k) => (k === 300 ? closing : request));
    expect(() => threaded.processBatch(requests)).toThrow(/the engine is closed/);
    expect(() => threaded.processBatch([request])).toThrow(/the engine is closed/);
    // closed in a chunk with no valid request (the third, 192 to 447), so the second is
    // joined with no chunk started
    const other = await Engine.open({ db, now: NOW, batchThreads: 2 });
    const closingBad = {
      get cells() {
        other.close();
        return 'x';
      },
    };
    const mixed = Array.from({ length: 600 }, (_, k) =>
      k < 192 ? request : k === 300 ? closingBad : { bad: k },
    );
    expect(() => other.processBatch(mixed)).toThrow(/the engine is closed/);
  });

  it('refuses a thread count that is not a whole number from 1 to 256', async () => {
    for (const batchThreads of [0, 1.5, -1, 257, Number.NaN]) {
      await expect(Engine.open({ db, batchThreads })).rejects.toThrow(/batchThreads must be a whole number/);
    }
  });
});

describe('calls back into the engine', () => {
  it('answers a request whose getter calls process or processBatch as it answers both alone', () => {
    const a = { cells: [fixtureCell(1)], address: 0 };
    const b = { cells: [fixtureCell(2)], address: 0 };
    const alone = [engine.process(a), engine.process(b)];
    let nested: unknown[] = [];
    const sneaky = {
      get cells(): unknown {
        nested = [engine.process(b), engine.processBatch([a, b])];
        return [fixtureCell(1)];
      },
      address: 0,
    };
    expect(engine.process(sneaky)).toEqual(alone[0]);
    expect(nested).toEqual([alone[1], alone]);
    nested = [];
    // in a batch, after other requests of the chunk were encoded
    expect(engine.processBatch([b, sneaky, a])).toEqual([alone[1], alone[0], alone[0]]);
    expect(nested).toEqual([alone[1], alone]);
  });
});

describe('border strictness (bt) on the embedded Natural Earth land', () => {
  // The fixture cell 262/1/30/1 sits in the North Sea at 52.3 N 3.9 E, about 40 km off the
  // Dutch coast (nothing but water within 30 km), so every bt level moves it.
  const sea = { cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 30, cid: 1 }], address: 0 };
  const km = (a: { lat?: number; lon?: number }) => {
    const r = 6371.0088;
    const p1 = (52.3 * Math.PI) / 180;
    const p2 = ((a.lat as number) * Math.PI) / 180;
    const dl = (((a.lon as number) - 3.9) * Math.PI) / 180;
    const h = Math.sin((p2 - p1) / 2) ** 2 + Math.cos(p1) * Math.cos(p2) * Math.sin(dl / 2) ** 2;
    return 2 * r * Math.asin(Math.sqrt(h));
  };

  it('moves an answer at sea toward land, less for looser levels', () => {
    const strict = engine.process({ ...sea, bt: 0 });
    const medium = engine.process({ ...sea, bt: 1 });
    const low = engine.process({ ...sea, bt: 2 });
    expect(km(strict)).toBeGreaterThan(km(medium));
    expect(km(medium)).toBeGreaterThan(km(low));
    // bt=1 and bt=2 stop 5 and 15 km from land: 10 km apart along the same line.
    expect(km(medium) - km(low)).toBeGreaterThan(9);
    expect(km(medium) - km(low)).toBeLessThan(11);
    // The radius covers the distance moved.
    expect(low.accuracy).toBeGreaterThanOrEqual(km(low) * 1000 - 1);
  });

  it('leaves the answer alone without land data', async () => {
    const noLand = await Engine.open({ db, now: NOW, land: false });
    const r = noLand.process({ ...sea, bt: 0 });
    expect(r.lat).toBeCloseTo(52.3, 6);
    expect(r.lon).toBeCloseTo(3.9, 6);
    noLand.close();
  });
});

describe('Engine.open', () => {
  it('rejects a directory without a database with a clear message', async () => {
    const empty = tempDir('wb-empty-');
    await expect(Engine.open({ db: empty })).rejects.toThrow(/no station database/);
  });

  it('rejects a corrupt database with a clear message', async () => {
    const dir = tempDir('wb-bad-');
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({
        format: 1,
        generation: 1,
        created: 0,
        shards: [{ file: 'x.fb', cells: 1, wifi: 0, bytes: 10 }],
      }),
    );
    writeFileSync(join(dir, 'x.fb'), 'not a flatbuffer at all, but long enough to read a header from it....');
    await expect(Engine.open({ db: dir })).rejects.toThrow(/corrupt station database/);
  });

  it('opens the embedded demo database with no options', async () => {
    const demo = await Engine.open();
    const s = demo.stats();
    expect(s.simulated).toBe(true);
    expect(s.cells).toBeGreaterThan(100);
    expect(s.hasLand).toBe(true);
    expect(s.hasIp).toBe(true);
    demo.close();
    expect(() => demo.process({})).toThrow(/closed/);
  });
});

describe('the native locate function', () => {
  it('locates a batch in one buffer or on the batch threads, refuses bad arguments and malformed batches, and stops at close', () => {
    const handle = native().NativeEngine.open({ db, now: NOW });
    const locate = handle.locateFunction();
    const wire = new WireBuffers();
    const parsed = parseRequest({ cells: [fixtureCell(1)], address: 0 });
    if (!parsed.ok) throw new Error(parsed.message);
    wire.encode([parsed.request, parsed.request]);
    expect(locate(wire.buffer, wire.length, undefined)).toBe(2);
    const at = wire.answerAt(1);
    expect(wire.buffer[at]).toBe(1);
    expect(wire.buffer[at + 1]).toBeCloseTo(52.5, 9);
    expect(wire.buffer[at + 2]).toBeCloseTo(13.4, 9);
    const call = locate as (...a: unknown[]) => number;
    expect(() => call(new Float32Array(16), 7, undefined)).toThrow(/locate takes/);
    expect(() => call(wire.buffer, 'x', undefined)).toThrow(/locate takes/);
    expect(() => call(wire.buffer, wire.length, 'ip')).toThrow(/locate takes/);
    expect(() => locate(wire.buffer, wire.buffer.length + 1, undefined)).toThrow(/beyond the buffer/);
    expect(() => locate(new Float64Array([1, 0, 1, 1, 0, 1, -1]), 7, undefined)).toThrow(/truncated body/);
    // a batch spread over threads answers as on one
    const many = Array.from({ length: 1100 }, () => parsed.request);
    wire.encode(many);
    wire.reserveAnswers(many.length);
    expect(locate(wire.buffer, wire.length, undefined, 4)).toBe(many.length);
    const threaded = Array.from(wire.buffer.subarray(wire.length, wire.length + 6 * many.length));
    expect(locate(wire.buffer, wire.length, undefined, 1)).toBe(many.length);
    expect(Array.from(wire.buffer.subarray(wire.length, wire.length + 6 * many.length))).toEqual(threaded);
    expect(() => call(wire.buffer, wire.length, undefined, 'two')).toThrow(/locate takes/);
    // started on the batch threads, the same batch answers the same, whatever the buffer
    // holds by the join (the batch was copied)
    const ticket = handle.locateStart(wire.buffer, wire.length, undefined, 2);
    const second = handle.locateStart(wire.buffer, wire.length, undefined, 0);
    wire.buffer.fill(Number.NaN);
    const answers = new Float64Array(6 * many.length);
    expect(handle.locateJoin(ticket, answers)).toBe(many.length);
    expect(Array.from(answers)).toEqual(threaded);
    expect(() => handle.locateJoin(ticket, answers)).toThrow(/no batch is pending under ticket/);
    expect(() => handle.locateJoin(second, new Float64Array(6))).toThrow(/answer buffer is too small/);
    expect(() => handle.locateStart(new Float64Array([1, 0, 1, 1, 0, 1, -1]), 7, undefined, 2)).toThrow(
      /truncated body/,
    );
    expect(() => handle.locateStart(wire.buffer, wire.buffer.length + 1, undefined, 2)).toThrow(
      /beyond the buffer/,
    );
    handle.close();
    expect(() => handle.locateStart(wire.buffer, 7, undefined, 2)).toThrow(/the engine is closed/);
    // the function holds the database weakly: close releases it, and the function says so
    expect(() => locate(wire.buffer, wire.length, undefined)).toThrow(/the engine is closed/);
  });
});
