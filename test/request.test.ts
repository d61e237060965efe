import { describe, expect, it } from 'vitest';
import { GeoMessage } from '../src/errors.js';
import {
  type CellObservation,
  formatBssid,
  type ParseResult,
  parseBssid,
  parseRadio,
  parseRequest,
  parseRequestText,
  RadioCode,
  UNKNOWN_MCC,
  UNKNOWN_RADIO,
} from '../src/locating/request/index.js';

const gsmCell = { radio: 'gsm', mcc: 262, mnc: 2, lac: 801, cid: 20819 };
const lteCell = { radio: 'lte', mcc: 310, mnc: 410, lac: 7033, cid: 17811 };
const ap1 = { bssid: '00:17:c5:cd:ca:aa', signal: -70 };
const ap2 = { bssid: '00:25:9c:cf:1c:ac', signal: -80 };

function ok(result: ParseResult) {
  if (!result.ok) throw new Error(`expected ok, got ${result.message}`);
  return result.request;
}

function message(result: ParseResult): string {
  if (result.ok) throw new Error('expected an error');
  return result.message;
}

function cellsOf(value: unknown): CellObservation[] {
  return ok(parseRequest(value)).cells;
}

describe('messages', () => {
  it('are spelled exactly as in spec 7.1', () => {
    // Clients match these texts literally; balance and no-match errors come from the server and engine.
    expect(Object.values(GeoMessage).sort()).toEqual(
      [
        'Invalid country code (mcc)',
        'Invalid network code (mnc)',
        'Invalid request',
        'Invalid token - get a trial token by signing up for free',
        'No cell ID provided',
        'No country code provided',
        'No location area code provided',
        'No matches found',
        'No matches found, please try again shortly',
        'No network data provided',
        'No valid cell IDs or LACs provided',
        'Token balance over; you have used up all your requests for today',
      ].sort(),
    );
  });
});

describe('body', () => {
  it('accepts a minimal request and applies the defaults', () => {
    const req = ok(parseRequest({ token: 'abc', cells: [lteCell] }));
    expect(req).toEqual({
      token: 'abc',
      cells: [{ radio: RadioCode.lte, mcc: 310, mnc: 410, lac: 7033, cid: 17811 }],
      wifi: [],
      fallbacks: { lacf: 1, scf: 1, ipf: 0 },
      bt: 1,
      address: 1,
      metadata: 0,
      geolocation: 1,
      gps: [],
      gpsSandbox: 1,
    });
  });

  it('rejects a body that is not a JSON object', () => {
    for (const body of [null, [], 'x', 42, true, undefined, [lteCell]]) {
      expect(message(parseRequest(body))).toBe(GeoMessage.invalidRequest);
    }
    expect(message(parseRequestText('"cells"'))).toBe(GeoMessage.invalidRequest);
  });

  it('rejects malformed JSON text', () => {
    expect(message(parseRequestText('{"cells": [}'))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequestText(''))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequestText("{'mcc': 262}"))).toBe(GeoMessage.invalidRequest);
  });

  it('rejects an unquoted number with a leading zero (spec 2.2 body rule 1)', () => {
    const text = '{"cells":[{"radio":"gsm","mcc":262,"mnc":01,"lac":801,"cid":20819}]}';
    expect(message(parseRequestText(text))).toBe(GeoMessage.invalidRequest);
  });

  it('accepts quoted numbers, leading zeros included', () => {
    const text = '{"cells":[{"radio":"gsm","mcc":"262","mnc":"01","lac":"801","cid":" 20819 "}]}';
    expect(ok(parseRequestText(text)).cells[0]).toEqual({ radio: 0, mcc: 262, mnc: 1, lac: 801, cid: 20819 });
  });

  it('ignores unknown fields and prototype keys', () => {
    const text = `{"__proto__":{"mcc":1},"constructor":{"x":1},"extra":[1,2],"cells":[${JSON.stringify(lteCell)}]}`;
    const req = ok(parseRequestText(text));
    expect(req.cells).toHaveLength(1);
    expect(({} as Record<string, unknown>).mcc).toBeUndefined();
  });

  it('does not read inherited properties', () => {
    const cell = Object.create({ mcc: 262 }) as Record<string, unknown>;
    Object.assign(cell, { radio: 'gsm', mnc: 1, lac: 1, cid: 1 });
    expect(message(parseRequest({ cells: [cell] }))).toBe(GeoMessage.noCountryCode);
  });

  it('turns a throwing getter into Invalid request', () => {
    const body = {
      get cells(): unknown {
        throw new Error('boom');
      },
    };
    expect(message(parseRequest(body))).toBe(GeoMessage.invalidRequest);
  });

  it('reads the fields of a body once, before any check, and only its enumerable ones', () => {
    // A getter that throws is Invalid request even where a check before it would have failed.
    const throwing = {
      get wifi(): unknown {
        throw new Error('boom');
      },
      cells: [lteCell],
    };
    expect(message(parseRequest(throwing, { requireToken: true }))).toBe(GeoMessage.invalidRequest);
    const hidden = { token: 't' };
    Object.defineProperty(hidden, 'cells', { value: [lteCell], enumerable: false });
    expect(message(parseRequest(hidden))).toBe(GeoMessage.noNetworkData);
    Object.defineProperty(hidden, 'wifi', { value: [ap1, ap2], enumerable: true });
    expect(ok(parseRequest(hidden)).wifi).toHaveLength(2);
  });

  it('gives a getter that parses another request its own reader', () => {
    const inner = { cells: [gsmCell], address: 0 };
    let innerResult: ParseResult | undefined;
    // read while the outer request's first cell is already kept
    const second = {
      ...gsmCell,
      get radio(): string {
        innerResult = parseRequest(inner);
        return 'umts';
      },
    };
    const req = ok(parseRequest({ cells: [lteCell, second] }));
    expect(req.cells).toEqual(cellsOf({ cells: [lteCell, { ...gsmCell, radio: 'umts' }] }));
    expect(ok(innerResult as ParseResult)).toEqual(ok(parseRequest(inner)));
  });
});

describe('token', () => {
  it('is optional by default', () => {
    expect(ok(parseRequest({ cells: [lteCell] })).token).toBeUndefined();
    // JavaScript callers may pass null for "no options"
    expect(ok(parseRequest({ cells: [lteCell] }, null as unknown as undefined)).token).toBeUndefined();
  });

  it('is required when the caller says so', () => {
    expect(message(parseRequest({ cells: [lteCell] }, { requireToken: true }))).toBe(GeoMessage.invalidToken);
    expect(message(parseRequest({ token: '  ', cells: [lteCell] }, { requireToken: true }))).toBe(
      GeoMessage.invalidToken,
    );
    expect(ok(parseRequest({ token: ' pk.1 ', cells: [lteCell] }, { requireToken: true })).token).toBe(
      'pk.1',
    );
  });

  it('is reported before parsing errors', () => {
    expect(message(parseRequest({ cells: 'x' }, { requireToken: true }))).toBe(GeoMessage.invalidToken);
  });

  it('must be a string', () => {
    expect(message(parseRequest({ token: 123, cells: [lteCell] }))).toBe(GeoMessage.invalidRequest);
  });
});

describe('id', () => {
  it('accepts up to 20 letters and digits, lower-cased', () => {
    expect(ok(parseRequest({ id: 'Device42', cells: [lteCell] })).id).toBe('device42');
    expect(ok(parseRequest({ id: 'a'.repeat(20), cells: [lteCell] })).id).toBe('a'.repeat(20));
  });

  it('rejects longer ids, other characters and non-strings', () => {
    for (const id of ['a'.repeat(21), 'dev-1', 'dev 1', 'ü', 42]) {
      expect(message(parseRequest({ id, cells: [lteCell] }))).toBe(GeoMessage.invalidRequest);
    }
  });
});

describe('radio', () => {
  it('parses names case-insensitively with the aliases of table 2.3', () => {
    expect(parseRadio('LTE')).toBe(RadioCode.lte);
    expect(parseRadio('wcdma')).toBe(RadioCode.umts);
    expect(parseRadio('HSPA+')).toBe(RadioCode.umts);
    expect(parseRadio('3g')).toBe(RadioCode.umts);
    expect(parseRadio('nb-iot')).toBe(RadioCode.nbiot);
    expect(parseRadio('NB_IoT')).toBe(RadioCode.nbiot);
    expect(parseRadio('5G')).toBe(RadioCode.nr);
    expect(parseRadio('nr')).toBe(RadioCode.nr);
    expect(parseRadio('4g')).toBe(RadioCode.lte);
    expect(parseRadio('CAT-M')).toBe(RadioCode.lte);
    expect(parseRadio('2g')).toBe(RadioCode.gsm);
    expect(parseRadio('EDGE')).toBe(RadioCode.gsm);
    expect(parseRadio('evdo_a')).toBe(RadioCode.cdma);
    expect(parseRadio('1xRTT')).toBe(RadioCode.cdma);
    expect(parseRadio('wifi')).toBeUndefined();
    expect(parseRadio('toString')).toBeUndefined();
    expect(parseRadio('__proto__')).toBeUndefined();
  });

  it('rejects an unknown radio name', () => {
    expect(message(parseRequest({ radio: 'tetra', cells: [{ ...lteCell, radio: undefined }] }))).toBe(
      GeoMessage.invalidRequest,
    );
    expect(message(parseRequest({ cells: [{ ...lteCell, radio: 'wimax' }] }))).toBe(
      GeoMessage.invalidRequest,
    );
    expect(message(parseRequest({ cells: [{ ...lteCell, radio: 3 }] }))).toBe(GeoMessage.invalidRequest);
  });

  it('leaves the radio unknown when none is given anywhere', () => {
    const [cell] = cellsOf({ cells: [{ mcc: 262, mnc: 1, lac: 100, cid: 123456 }] });
    expect(cell?.radio).toBe(UNKNOWN_RADIO);
  });
});

describe('top-level radio, mcc and mnc', () => {
  it('fill in cells that lack them; per-cell values override (2.2 rules 3-4)', () => {
    const cells = cellsOf({
      radio: 'gsm',
      mcc: 262,
      mnc: 1,
      cells: [
        { lac: 1, cid: 2 },
        { radio: 'lte', mcc: 208, mnc: 10, lac: 3, cid: 4 },
      ],
    });
    expect(cells).toEqual([
      { radio: RadioCode.gsm, mcc: 262, mnc: 1, lac: 1, cid: 2 },
      { radio: RadioCode.lte, mcc: 208, mnc: 10, lac: 3, cid: 4 },
    ]);
  });

  it('are checked even when every cell overrides them', () => {
    const cells = [lteCell];
    expect(message(parseRequest({ mcc: 1000, cells }))).toBe(GeoMessage.invalidMcc);
    expect(message(parseRequest({ mnc: 'x', cells }))).toBe(GeoMessage.invalidMnc);
  });
});

describe('cell fields', () => {
  it('requires a cid', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, cid: undefined }] }))).toBe(GeoMessage.noCellId);
    expect(message(parseRequest({ cells: [{ ...lteCell, cid: null }] }))).toBe(GeoMessage.noCellId);
  });

  it('requires a lac', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, lac: undefined }] }))).toBe(GeoMessage.noLac);
  });

  it('requires an mcc except for CDMA', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, mcc: undefined }] }))).toBe(GeoMessage.noCountryCode);
    expect(message(parseRequest({ cells: [{ mnc: 1, lac: 1, cid: 1 }] }))).toBe(GeoMessage.noCountryCode);
  });

  it('accepts a CDMA cell without mcc (spec 1.5.06)', () => {
    const [cell] = cellsOf({ radio: 'cdma', cells: [{ mnc: 4139, lac: 7, cid: 1234 }] });
    expect(cell).toEqual({ radio: RadioCode.cdma, mcc: UNKNOWN_MCC, mnc: 4139, lac: 7, cid: 1234 });
  });

  it('rejects an mcc that is out of range or not an integer', () => {
    for (const mcc of [1000, -1, 26.2, '26x', true, {}]) {
      expect(message(parseRequest({ cells: [{ ...lteCell, mcc }] }))).toBe(GeoMessage.invalidMcc);
    }
  });

  it('rejects a missing or out-of-range mnc, per radio', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, mnc: undefined }] }))).toBe(GeoMessage.invalidMnc);
    expect(message(parseRequest({ cells: [{ ...lteCell, mnc: 1000 }] }))).toBe(GeoMessage.invalidMnc);
    expect(message(parseRequest({ cells: [{ ...lteCell, mnc: '1.5' }] }))).toBe(GeoMessage.invalidMnc);
    const cdma = { radio: 'cdma', mcc: 310, lac: 1, cid: 1 };
    expect(message(parseRequest({ cells: [{ ...cdma, mnc: 0 }] }))).toBe(GeoMessage.invalidMnc);
    expect(cellsOf({ cells: [{ ...cdma, mnc: 32767 }] })[0]?.mnc).toBe(32767);
    expect(message(parseRequest({ cells: [{ ...cdma, mnc: 32768 }] }))).toBe(GeoMessage.invalidMnc);
  });

  it('reports missing fields before malformed ones', () => {
    expect(message(parseRequest({ cells: [{ radio: 'lte', mcc: 5000, mnc: 1, lac: 1 }] }))).toBe(
      GeoMessage.noCellId,
    );
  });

  it('drops cells whose lac or cid is outside the radio range', () => {
    const cells = cellsOf({
      cells: [
        { ...gsmCell, cid: 65536 },
        { ...gsmCell, lac: 65534 },
        { ...lteCell, cid: 2147483647 },
        { ...lteCell, lac: 'none' },
        gsmCell,
      ],
    });
    expect(cells).toEqual([{ radio: RadioCode.gsm, mcc: 262, mnc: 2, lac: 801, cid: gsmCell.cid }]);
  });

  it('keeps the first valid cell first (serving cell)', () => {
    const cells = cellsOf({ cells: [{ ...lteCell, cid: -5 }, gsmCell, lteCell] });
    expect(cells.map((c) => c.radio)).toEqual([RadioCode.gsm, RadioCode.lte]);
  });

  it('removes repeated cells', () => {
    expect(cellsOf({ cells: [lteCell, gsmCell, { ...lteCell, signal: -90 }] })).toHaveLength(2);
  });

  it('accepts a 36-bit NR cell id and a 24-bit TAC', () => {
    const nr = { radio: 'nr', mcc: 310, mnc: 260, lac: 16777215, cid: 68719476735 };
    expect(cellsOf({ cells: [nr] })[0]).toEqual({
      radio: RadioCode.nr,
      mcc: 310,
      mnc: 260,
      lac: 16777215,
      cid: 68719476735,
    });
    expect(cellsOf({ cells: [{ ...nr, cid: '68719476735' }] })[0]?.cid).toBe(68719476735);
    expect(message(parseRequest({ cells: [{ ...nr, cid: 68719476736 }] }))).toBe(GeoMessage.noValidCells);
  });

  it('applies the CDMA ranges (NID and BID)', () => {
    const cdma = { radio: 'cdma', mcc: 310, mnc: 4139 };
    expect(cellsOf({ cells: [{ ...cdma, lac: 65534, cid: 65535 }] })).toHaveLength(1);
    expect(message(parseRequest({ cells: [{ ...cdma, lac: 65535, cid: 1 }] }))).toBe(GeoMessage.noValidCells);
  });

  it('gives No valid cell IDs or LACs when no sent cell is usable', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, cid: 268435456 }] }))).toBe(GeoMessage.noValidCells);
    expect(message(parseRequest({ cells: [{ ...lteCell, lac: 65535 }], wifi: [ap1] }))).toBe(
      GeoMessage.noValidCells,
    );
  });

  it('accepts 7 cells and rejects 8; the limit can be raised', () => {
    const seven = Array.from({ length: 7 }, (_, i) => ({ ...lteCell, cid: i + 1 }));
    expect(cellsOf({ cells: seven })).toHaveLength(7);
    const eight = [...seven, { ...lteCell, cid: 100 }];
    expect(message(parseRequest({ cells: eight }))).toBe(GeoMessage.invalidRequest);
    expect(ok(parseRequest({ cells: eight }, { maxCells: 10 })).cells).toHaveLength(8);
  });

  it('rejects a cells value that is not an array of objects', () => {
    expect(message(parseRequest({ cells: lteCell }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequest({ cells: [lteCell, 'x'] }))).toBe(GeoMessage.invalidRequest);
  });
});

describe('optional cell values', () => {
  it('keeps in-range values', () => {
    const [cell] = cellsOf({ cells: [{ ...lteCell, signal: -100, asu: 40, ta: 5, psc: 503 }] });
    expect(cell).toMatchObject({ signal: -100, asu: 40, ta: 5, psc: 503 });
  });

  it('drops out-of-range, unused and non-numeric values without failing', () => {
    const [lte] = cellsOf({ cells: [{ ...lteCell, signal: -20, asu: 98, ta: 64, psc: 504 }] });
    expect(lte).toEqual({ radio: RadioCode.lte, mcc: 310, mnc: 410, lac: 7033, cid: 17811 });
    const [gsm] = cellsOf({ cells: [{ ...gsmCell, signal: 'strong', asu: 31, ta: 63, psc: 5 }] });
    expect(gsm).toEqual({ ...cellsOf({ cells: [gsmCell] })[0], asu: 31, ta: 63 });
    const [umts] = cellsOf({
      cells: [{ radio: 'umts', mcc: 1, mnc: 1, lac: 1, cid: 1, ta: 3, psc: 511, asu: -5 }],
    });
    expect(umts).toMatchObject({ psc: 511, asu: -5 });
    expect(umts?.ta).toBeUndefined();
  });

  it('uses the NR PCI range and ignores NB-IoT signal', () => {
    const [nr] = cellsOf({
      cells: [{ radio: 'nr', mcc: 1, mnc: 1, lac: 1, cid: 1, psc: 1007, signal: -140 }],
    });
    expect(nr).toMatchObject({ psc: 1007, signal: -140 });
    const [nb] = cellsOf({
      cells: [{ radio: 'nbiot', mcc: 1, mnc: 1, lac: 1, cid: 1, psc: 503, signal: -100 }],
    });
    expect(nb).toMatchObject({ psc: 503 });
    expect(nb?.signal).toBeUndefined();
  });

  it('rounds fractional signal readings', () => {
    expect(cellsOf({ cells: [{ ...lteCell, signal: -100.6 }] })[0]?.signal).toBe(-101);
  });
});

describe('BSSID', () => {
  const mac = 0x0024b2c3d4e5;

  it('parses every delimiter style, case-insensitively', () => {
    for (const text of [
      '00:24:b2:c3:d4:e5',
      '00-24-B2-C3-D4-E5',
      '00.24.b2.c3.d4.e5',
      '0024.b2c3.d4e5',
      '0024b2c3d4e5',
      '0024B2C3D4E5',
      '0:24:b2:c3:d4:e5',
      ' 00:24:b2:c3:d4:e5 ',
    ]) {
      expect(parseBssid(text), text).toBe(mac);
    }
  });

  it('rejects text that is not a MAC address', () => {
    for (const text of [
      '',
      '00:24:b2:c3:d4',
      '00:24:b2:c3:d4:e5:f6',
      '00:24-b2:c3:d4:e5',
      '0024b2c3d4e',
      'gg:24:b2:c3:d4:e5',
      '0024:b2c3:d4e5:',
    ]) {
      expect(parseBssid(text), text).toBeUndefined();
    }
  });

  it('formats a MAC integer', () => {
    expect(formatBssid(mac)).toBe('00:24:b2:c3:d4:e5');
    expect(formatBssid(0xffffffffffff)).toBe('ff:ff:ff:ff:ff:ff');
    expect(() => formatBssid(2 ** 48)).toThrow(RangeError);
  });
});

describe('wifi', () => {
  it('normalises access points', () => {
    const req = ok(
      parseRequest({
        wifi: [
          { bssid: '00:17:C5:CD:CA:AA', signal: -70, frequency: 2437, channel: 6, signalToNoiseRatio: 30 },
          { bssid: '0025.9ccf.1cac', signal: '-80' },
        ],
      }),
    );
    expect(req.wifi).toEqual([
      { bssid: 0x0017c5cdcaaa, signal: -70, frequency: 2437, channel: 6, snr: 30 },
      { bssid: 0x00259ccf1cac, signal: -80 },
    ]);
  });

  it('drops invalid, broadcast, zero, multicast and locally administered MACs', () => {
    const req = ok(
      parseRequest({
        wifi: [
          ap1,
          { bssid: 'not a mac' },
          { bssid: 'ff:ff:ff:ff:ff:ff' },
          { bssid: '00:00:00:00:00:00' },
          { bssid: '01:00:5e:00:00:01' },
          { bssid: 'da:a1:19:12:34:56' },
          { bssid: 12345 },
          {},
          ap2,
        ],
      }),
    );
    expect(req.wifi.map((a) => formatBssid(a.bssid))).toEqual([ap1.bssid, ap2.bssid]);
  });

  it('keeps the stronger of duplicate access points', () => {
    const req = ok(parseRequest({ wifi: [ap1, ap2, { bssid: '00-17-C5-CD-CA-AA', signal: -60 }] }));
    expect(req.wifi).toEqual([
      { bssid: 0x0017c5cdcaaa, signal: -60 },
      { bssid: 0x00259ccf1cac, signal: -80 },
    ]);
  });

  it('clamps signals near the spec range and drops the rest', () => {
    const signals = [-40, -118, -20, 0, 70, -130, -51, -113];
    const wifi = signals.map((signal, i) => ({ bssid: `00:11:22:33:44:${(i + 16).toString(16)}`, signal }));
    const req = ok(parseRequest({ wifi }));
    expect(req.wifi.map((a) => a.signal)).toEqual([
      -51,
      -113,
      undefined,
      undefined,
      undefined,
      undefined,
      -51,
      -113,
    ]);
  });

  it('ignores WiFi with fewer than 2 valid access points', () => {
    const req = ok(parseRequest({ cells: [lteCell], wifi: [ap1, { bssid: 'x' }] }));
    expect(req.wifi).toEqual([]);
  });

  it('rejects more than 15 objects and non-array or non-object values', () => {
    const wifi = Array.from({ length: 16 }, (_, i) => ({ bssid: `00:11:22:33:44:${(i + 16).toString(16)}` }));
    expect(ok(parseRequest({ wifi: wifi.slice(0, 15) })).wifi).toHaveLength(15);
    expect(message(parseRequest({ wifi }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequest({ wifi: ap1 }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequest({ wifi: [ap1, ap2, 'x'] }))).toBe(GeoMessage.invalidRequest);
  });
});

describe('nothing to locate with', () => {
  it('gives No network data provided when neither cells nor wifi were sent', () => {
    expect(message(parseRequest({ token: 't' }))).toBe(GeoMessage.noNetworkData);
    expect(message(parseRequest({ cells: [], wifi: [] }))).toBe(GeoMessage.noNetworkData);
    expect(message(parseRequest({ ip: '8.8.8.8' }))).toBe(GeoMessage.noNetworkData);
  });

  it('gives No network data provided for WiFi-only requests with fewer than 2 valid APs', () => {
    expect(message(parseRequest({ wifi: [ap1] }))).toBe(GeoMessage.noNetworkData);
    expect(message(parseRequest({ wifi: [ap1, { bssid: 'ff:ff:ff:ff:ff:ff' }] }))).toBe(
      GeoMessage.noNetworkData,
    );
  });

  it('accepts invalid cells when WiFi is usable, dropping the cells', () => {
    const req = ok(parseRequest({ cells: [{ ...lteCell, cid: -1 }], wifi: [ap1, ap2] }));
    expect(req.cells).toEqual([]);
    expect(req.wifi).toHaveLength(2);
  });

  it('accepts a request with nothing but the IP fallback enabled', () => {
    const req = ok(parseRequest({ ip: '2001:db8::1', fallbacks: { ipf: 1 } }));
    expect(req.ip).toBe('2001:db8::1');
    expect(ok(parseRequest({ cells: [{ ...lteCell, lac: -1 }], fallbacks: { ipf: 1 } })).cells).toEqual([]);
  });
});

describe('fallbacks', () => {
  it('uses the defaults ipf 0, lacf 1, scf 1', () => {
    expect(ok(parseRequest({ cells: [lteCell], fallbacks: {} })).fallbacks).toEqual({
      ipf: 0,
      lacf: 1,
      scf: 1,
    });
  });

  it('applies all before the individual switches', () => {
    const all1 = ok(parseRequest({ cells: [lteCell], fallbacks: { all: 1 } })).fallbacks;
    expect(all1).toEqual({ ipf: 1, lacf: 1, scf: 1 });
    const all0 = ok(parseRequest({ cells: [lteCell], fallbacks: { all: 0, lacf: 2 } })).fallbacks;
    expect(all0).toEqual({ ipf: 0, lacf: 2, scf: 0 });
  });

  it('accepts booleans and quoted numbers for switches', () => {
    const f = ok(parseRequest({ cells: [lteCell], fallbacks: { ipf: true, scf: '0' } })).fallbacks;
    expect(f).toEqual({ ipf: 1, lacf: 1, scf: 0 });
  });

  it('accepts an array of switch names, and [] from PHP clients', () => {
    expect(ok(parseRequest({ cells: [lteCell], fallbacks: ['ipf'] })).fallbacks).toEqual({
      ipf: 1,
      lacf: 1,
      scf: 1,
    });
    expect(ok(parseRequest({ cells: [lteCell], fallbacks: [] })).fallbacks).toEqual({
      ipf: 0,
      lacf: 1,
      scf: 1,
    });
    expect(ok(parseRequest({ cells: [lteCell], fallbacks: ['all', 'cidf'] })).fallbacks.ipf).toBe(1);
  });

  it('rejects invalid values', () => {
    for (const fallbacks of [
      { lacf: 3 },
      { ipf: 2 },
      { all: 'yes' },
      { scf: -1 },
      { lacf: true },
      'ipf',
      1,
      [1],
    ]) {
      expect(message(parseRequest({ cells: [lteCell], fallbacks })), JSON.stringify(fallbacks)).toBe(
        GeoMessage.invalidRequest,
      );
    }
  });
});

describe('other options', () => {
  it('reads bt, address, metadata, geolocation, gps_sandbox and accept-language', () => {
    const req = ok(
      parseRequest({
        cells: [lteCell],
        bt: 0,
        address: '2',
        metadata: 1,
        geolocation: false,
        gps_sandbox: 0,
        'accept-language': 'de,en;q=0.5',
      }),
    );
    expect(req).toMatchObject({ bt: 0, address: 2, metadata: 1, geolocation: 0, gpsSandbox: 0 });
    expect(req.acceptLanguage).toBe('de,en;q=0.5');
  });

  it('rejects out-of-range or malformed options', () => {
    for (const extra of [
      { bt: 3 },
      { bt: true },
      { address: -1 },
      { metadata: 2 },
      { geolocation: 'x' },
      { gps_sandbox: 1.5 },
      { 'accept-language': 5 },
    ]) {
      expect(message(parseRequest({ cells: [lteCell], ...extra })), JSON.stringify(extra)).toBe(
        GeoMessage.invalidRequest,
      );
    }
  });

  it('requires ip to be an IPv4 or IPv6 address', () => {
    expect(ok(parseRequest({ cells: [lteCell], ip: '192.0.2.1' })).ip).toBe('192.0.2.1');
    for (const ip of ['192.0.2.256', 'example.com', '1.2.3', 17]) {
      expect(message(parseRequest({ cells: [lteCell], ip }))).toBe(GeoMessage.invalidRequest);
    }
  });
});

describe('gps', () => {
  it('reads GPS objects', () => {
    const gps = [
      {
        source: 'gps',
        lat: 52.52,
        lon: 13.405,
        accuracy: 5,
        altitude: -10,
        altitude_accuracy: 3,
        speed: 0,
        heading: 360,
        timestamp: 1700000000000,
      },
      { lat: -90, lon: 180 },
    ];
    expect(ok(parseRequest({ cells: [lteCell], gps })).gps).toEqual([
      {
        source: 'gps',
        lat: 52.52,
        lon: 13.405,
        accuracy: 5,
        altitude: -10,
        altitudeAccuracy: 3,
        speed: 0,
        heading: 360,
        timestamp: 1700000000000,
      },
      { lat: -90, lon: 180 },
    ]);
  });

  it('rejects invalid GPS objects', () => {
    for (const fix of [
      { lon: 1 },
      { lat: 91, lon: 0 },
      { lat: 0, lon: -181 },
      { lat: 0, lon: 0, accuracy: -1 },
      { lat: 0, lon: 0, speed: -0.1 },
      { lat: 0, lon: 0, heading: 361 },
      { lat: 0, lon: 0, altitude_accuracy: 'x' },
      { lat: 0, lon: 0, timestamp: 1.5 },
      { lat: 0, lon: 0, source: 1 },
      { lat: 'NaN', lon: 0 },
      // spec 2.5: floats, so JSON numbers only; a source of bounded length
      { lat: '52.5', lon: 13.4 },
      { lat: 52.5, lon: 13.4, accuracy: '5' },
      { lat: 52.5, lon: 13.4, timestamp: '1700000000000' },
      { lat: 52.5, lon: 13.4, source: 'x'.repeat(33) },
      { lat: 52.5, lon: 13.4, source: 'x'.repeat(100 * 1024) },
    ]) {
      expect(message(parseRequest({ cells: [lteCell], gps: [fix] })), JSON.stringify(fix)).toBe(
        GeoMessage.invalidRequest,
      );
    }
    expect(message(parseRequest({ cells: [lteCell], gps: { lat: 0, lon: 0 } }))).toBe(
      GeoMessage.invalidRequest,
    );
  });
});

describe('hostile input', () => {
  // A small deterministic generator, so that a failure can be reproduced from its seed.
  function rng(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return s / 2 ** 32;
    };
  }

  const keys = [
    'radio',
    'mcc',
    'mnc',
    'lac',
    'cid',
    'cells',
    'wifi',
    'bssid',
    'signal',
    'fallbacks',
    'all',
    'lacf',
    'gps',
    'lat',
    'lon',
    'ip',
    'id',
    'token',
    'bt',
    '__proto__',
    'constructor',
    'psc',
    'ta',
    'asu',
  ];
  const scalars: unknown[] = [
    null,
    true,
    false,
    0,
    -1,
    1,
    7,
    1e308,
    -1e308,
    0.5,
    Number.MAX_SAFE_INTEGER,
    2 ** 60,
    '',
    ' ',
    'NaN',
    '01',
    '-0',
    '1e3',
    'lte',
    'cdma',
    '00:11:22:33:44:55',
    '::1',
    'x'.repeat(300),
    '__proto__',
  ];

  function randomValue(next: () => number, depth: number): unknown {
    const roll = next();
    if (depth > 3 || roll < 0.5) return scalars[Math.floor(next() * scalars.length)];
    if (roll < 0.75)
      return Array.from({ length: Math.floor(next() * 9) }, () => randomValue(next, depth + 1));
    const o: Record<string, unknown> = {};
    const n = Math.floor(next() * 8);
    for (let i = 0; i < n; i++)
      o[keys[Math.floor(next() * keys.length)] ?? 'x'] = randomValue(next, depth + 1);
    return o;
  }

  it('never throws and always answers with a spec message', () => {
    const messages = new Set<string>(Object.values(GeoMessage));
    const seen = new Set<string>();
    const next = rng(20261121);
    for (let i = 0; i < 5000; i++) {
      const value = randomValue(next, 0);
      const result = parseRequest(value, { requireToken: i % 2 === 0 });
      seen.add(result.ok ? 'ok' : result.message);
      if (!result.ok) expect(messages.has(result.message)).toBe(true);
      const text = parseRequestText(JSON.stringify(value) ?? 'undefined');
      if (!text.ok) expect(messages.has(text.message)).toBe(true);
    }
    // Guards the generator itself: a fuzz loop that only ever hits one branch proves nothing.
    expect(seen.size).toBeGreaterThanOrEqual(5);
  });

  it('never throws on single-field mutations of a valid request', () => {
    const messages = new Set<string>(Object.values(GeoMessage));
    const seen = new Set<string>();
    const next = rng(7);
    for (let i = 0; i < 5000; i++) {
      const body: Record<string, unknown> = {
        radio: 'lte',
        cells: [{ ...lteCell }, { ...gsmCell }],
        wifi: [{ ...ap1 }, { ...ap2 }],
        fallbacks: { lacf: 1 },
        gps: [{ lat: 1, lon: 2 }],
      };
      // Mutate the top level, a cell, an AP, the fallbacks or a GPS fix.
      const targets = [
        body,
        ...(body.cells as object[]),
        ...(body.wifi as object[]),
        body.fallbacks,
        ...(body.gps as object[]),
      ];
      const target = targets[Math.floor(next() * targets.length)] as Record<string, unknown>;
      target[keys[Math.floor(next() * keys.length)] ?? 'x'] = randomValue(next, 2);
      const result = parseRequest(body);
      seen.add(result.ok ? 'ok' : result.message);
      if (!result.ok) expect(messages.has(result.message)).toBe(true);
    }
    expect(seen.has('ok')).toBe(true);
    expect(seen.size).toBeGreaterThanOrEqual(5);
  });

  it('copes with non-finite numbers and sparse or huge arrays', () => {
    expect(message(parseRequest({ cells: [{ ...lteCell, mcc: Number.NaN }] }))).toBe(GeoMessage.invalidMcc);
    expect(message(parseRequest({ cells: [{ ...lteCell, mnc: Number.POSITIVE_INFINITY }] }))).toBe(
      GeoMessage.invalidMnc,
    );
    expect(message(parseRequest({ cells: new Array(1e9) }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequest({ gps: new Array(1e9) }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequest({ cells: new Array(3) }))).toBe(GeoMessage.invalidRequest);
    expect(message(parseRequestText('{"cells":[{"radio":"lte","mcc":1e400,"mnc":1,"lac":1,"cid":1}]}'))).toBe(
      GeoMessage.invalidMcc,
    );
  });
});
