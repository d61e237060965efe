/**
 * The validator's state: {@link RequestReader} checks a request value against every rule and
 * keeps the outcome as rows of numbers ({@link RequestRows}), the one form the wire encoder
 * takes.
 */
import { GeoMessage, type GeoMessageText } from '../../errors.js';
import { readBody } from './body.js';
import {
  type CellObservation,
  DEFAULT_MAX_CELLS,
  type GpsObservation,
  type LocateRequest,
  MAX_WIFI,
  type ParseOptions,
  type WifiObservation,
} from './types.js';
import { present, Rejection } from './values.js';

/** Numbers of a cell in {@link RequestReader.cells}, in this order. */
export const CELL_FIELDS = 9;
/** Offsets of a cell's fields in {@link RequestReader.cells}; NaN marks an absent optional value. */
export const CellField = {
  radio: 0,
  mcc: 1,
  mnc: 2,
  lac: 3,
  cid: 4,
  signal: 5,
  asu: 6,
  ta: 7,
  psc: 8,
} as const;
/** Numbers of an access point in {@link RequestReader.aps}. */
export const AP_FIELDS = 5;
/** Offsets of an access point's fields in {@link RequestReader.aps}; NaN marks an absent value. */
export const ApField = { bssid: 0, signal: 1, frequency: 2, channel: 3, snr: 4 } as const;

/**
 * A validated request as the core reads it: the cells and access points as rows of numbers
 * ({@link CellField}, {@link ApField}), and the header fields. {@link RequestReader} is one
 * (the request it read last); {@link rowsOf} makes one of a kept {@link LocateRequest}. The
 * wire encoder (`native/wire.ts`) takes only this.
 */
export interface RequestRows {
  readonly cells: Float64Array;
  readonly cellCount: number;
  readonly aps: Float64Array;
  readonly apCount: number;
  readonly lacf: number;
  readonly scf: number;
  readonly ipf: number;
  readonly bt: number;
  readonly ip: string | undefined;
}

/** The rows of a validated request object: the inverse of {@link RequestReader.toRequest}. */
export function rowsOf(request: LocateRequest): RequestRows {
  const cells = new Float64Array(CELL_FIELDS * request.cells.length);
  request.cells.forEach((c, k) => {
    const at = k * CELL_FIELDS;
    cells[at + CellField.radio] = c.radio;
    cells[at + CellField.mcc] = c.mcc;
    cells[at + CellField.mnc] = c.mnc;
    cells[at + CellField.lac] = c.lac;
    cells[at + CellField.cid] = c.cid;
    cells[at + CellField.signal] = c.signal ?? Number.NaN;
    cells[at + CellField.asu] = c.asu ?? Number.NaN;
    cells[at + CellField.ta] = c.ta ?? Number.NaN;
    cells[at + CellField.psc] = c.psc ?? Number.NaN;
  });
  const aps = new Float64Array(AP_FIELDS * request.wifi.length);
  request.wifi.forEach((w, k) => {
    const at = k * AP_FIELDS;
    aps[at + ApField.bssid] = w.bssid;
    aps[at + ApField.signal] = w.signal ?? Number.NaN;
    aps[at + ApField.frequency] = w.frequency ?? Number.NaN;
    aps[at + ApField.channel] = w.channel ?? Number.NaN;
    aps[at + ApField.snr] = w.snr ?? Number.NaN;
  });
  const f = request.fallbacks;
  return {
    cells,
    cellCount: request.cells.length,
    aps,
    apCount: request.wifi.length,
    lacf: f.lacf,
    scf: f.scf,
    ipf: f.ipf,
    bt: request.bt,
    ip: request.ip,
  };
}

/**
 * The validator itself: {@link RequestReader.read} checks a request value against every rule
 * and keeps the outcome in its fields, the cells and access points as rows of numbers, so
 * that the engine can encode them for the core without making an object per cell and access
 * point ({@link RequestReader.toRequest} makes the {@link LocateRequest} the public API
 * gives). The fields hold the last request read successfully; a read overwrites them.
 */
export class RequestReader implements RequestRows {
  token: string | undefined = undefined;
  /** Lower-cased. */
  id: string | undefined = undefined;
  ip: string | undefined = undefined;
  acceptLanguage: string | undefined = undefined;
  bt: 0 | 1 | 2 = 1;
  address: 0 | 1 | 2 = 1;
  metadata: 0 | 1 = 0;
  geolocation: 0 | 1 = 1;
  gpsSandbox: 0 | 1 = 1;
  lacf: 0 | 1 | 2 = 1;
  scf: 0 | 1 = 1;
  ipf: 0 | 1 = 0;
  /** The GPS fixes; undefined for none. */
  gps: GpsObservation[] | undefined = undefined;
  /** {@link CELL_FIELDS} numbers per valid, distinct cell, in request order. */
  cells = new Float64Array(CELL_FIELDS * DEFAULT_MAX_CELLS);
  cellCount = 0;
  /** {@link AP_FIELDS} numbers per valid, distinct access point; none when fewer than 2. */
  readonly aps = new Float64Array(AP_FIELDS * MAX_WIFI);
  apCount = 0;
  /** Whether a read is under way (a getter of the value being read may call back). */
  busy = false;

  /** Reads a request value: undefined when it is valid, else its spec 7.1 message. Never throws. */
  read(value: unknown, options?: ParseOptions): GeoMessageText | undefined {
    this.busy = true;
    try {
      return readBody(this, value, options ?? NO_OPTIONS);
    } catch (err) {
      if (err instanceof Rejection) return err.message as GeoMessageText;
      // Library callers may hand over proxies or objects with throwing getters: whatever
      // goes wrong while reading them is their malformed request, not our crash.
      return GeoMessage.invalidRequest;
    } finally {
      this.busy = false;
    }
  }

  /** The last request read, as the objects of {@link LocateRequest}. */
  toRequest(): LocateRequest {
    const cells: CellObservation[] = new Array(this.cellCount);
    for (let k = 0; k < this.cellCount; k++) {
      const c = this.cells;
      const at = k * CELL_FIELDS;
      cells[k] = {
        radio: c[at + CellField.radio] as number,
        mcc: c[at + CellField.mcc] as number,
        mnc: c[at + CellField.mnc] as number,
        lac: c[at + CellField.lac] as number,
        cid: c[at + CellField.cid] as number,
        signal: present(c[at + CellField.signal] as number),
        asu: present(c[at + CellField.asu] as number),
        ta: present(c[at + CellField.ta] as number),
        psc: present(c[at + CellField.psc] as number),
      };
    }
    const wifi: WifiObservation[] = new Array(this.apCount);
    for (let k = 0; k < this.apCount; k++) {
      const a = this.aps;
      const at = k * AP_FIELDS;
      wifi[k] = {
        bssid: a[at + ApField.bssid] as number,
        signal: present(a[at + ApField.signal] as number),
        frequency: present(a[at + ApField.frequency] as number),
        channel: present(a[at + ApField.channel] as number),
        snr: present(a[at + ApField.snr] as number),
      };
    }
    const request: LocateRequest = {
      cells,
      wifi,
      fallbacks: { lacf: this.lacf, scf: this.scf, ipf: this.ipf },
      bt: this.bt,
      address: this.address,
      metadata: this.metadata,
      geolocation: this.geolocation,
      gps: this.gps ?? [],
      gpsSandbox: this.gpsSandbox,
    };
    if (this.token !== undefined) request.token = this.token;
    if (this.id !== undefined) request.id = this.id;
    if (this.ip !== undefined) request.ip = this.ip;
    if (this.acceptLanguage !== undefined) request.acceptLanguage = this.acceptLanguage;
    return request;
  }
}

export const NO_OPTIONS: ParseOptions = {};
