/**
 * The batch wire format shared with the core (`crates/whereabouts-node/src/wire.rs`): requests
 * go down as one flat Float64Array, a header then the cells and access points of each, and the
 * answers come back as {@link ANSWER} numbers each in the same array, after the requests. NaN
 * marks an absent optional value.
 */
import {
  AP_FIELDS,
  ApField,
  CELL_FIELDS,
  CellField,
  type LocateRequest,
  type RequestRows,
  rowsOf,
} from '../locating/request/index.js';

const HEADER = 7;
const CELL = 9;
const WIFI = 3;
/** Numbers per answer. */
export const ANSWER = 6;

/** Answer field `fallback` codes of the core. */
export const FALLBACK_NAMES = [undefined, 'lacf', 'scf', 'ipf'] as const;

/**
 * One reusable buffer for a call's requests and answers: a call then allocates nothing on
 * the way to the core (no views, no result object). Requests are appended to
 * `buffer[0 .. length)`; the core writes {@link ANSWER} numbers per request after them, read
 * with {@link answerAt}.
 */
export class WireBuffers {
  buffer = new Float64Array(4096);
  /** IP addresses of the encoded requests, referenced by index from their header. */
  readonly ips: string[] = [];
  /** Numbers of `buffer` the encoded requests use. */
  length = 0;

  /** Starts a call: no request encoded. */
  clear(): void {
    this.length = 0;
    // The length setter is a builtin call, and almost no request carries an IP.
    if (this.ips.length > 0) this.ips.length = 0;
  }

  /** Encodes validated request objects (a batch), through {@link append}. */
  encode(requests: readonly LocateRequest[]): void {
    this.clear();
    for (const r of requests) this.append(rowsOf(r));
  }

  /**
   * Appends one validated request: the rows a {@link RequestReader} has just read (no objects
   * in between), or those of a kept request ({@link rowsOf}).
   */
  append(r: RequestRows): void {
    let at = this.#header(r.cellCount, r.apCount, r.lacf, r.scf, r.ipf, r.bt, r.ip);
    const input = this.buffer;
    const c = r.cells;
    for (let k = 0; k < r.cellCount * CELL_FIELDS; k += CELL_FIELDS) {
      at = writeCell(
        input,
        at,
        c[k + CellField.radio] as number,
        c[k + CellField.mcc] as number,
        c[k + CellField.mnc] as number,
        c[k + CellField.lac] as number,
        c[k + CellField.cid] as number,
        c[k + CellField.signal],
        c[k + CellField.asu],
        c[k + CellField.ta],
        c[k + CellField.psc],
      );
    }
    const a = r.aps;
    for (let k = 0; k < r.apCount * AP_FIELDS; k += AP_FIELDS) {
      at = writeAp(
        input,
        at,
        a[k + ApField.bssid] as number,
        a[k + ApField.signal],
        a[k + ApField.frequency],
      );
    }
    this.length = at;
  }

  /** Makes room for the answers to `count` requests; call before the core. */
  reserveAnswers(count: number): void {
    this.#reserve(this.length + count * ANSWER);
  }

  /** Where the answer to the `index`-th encoded request starts in `buffer`. */
  answerAt(index: number): number {
    return this.length + index * ANSWER;
  }

  /** The IP list argument of the core call. */
  ipsArgument(): string[] | undefined {
    return this.ips.length > 0 ? this.ips : undefined;
  }

  /** Keeps what is encoded and makes `size` numbers fit. */
  #reserve(size: number): void {
    if (this.buffer.length < size) {
      const grown = new Float64Array(Math.max(size, this.buffer.length * 2));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
  }

  /** Writes a request's header after the encoded ones, room made for its body; returns where the body starts. */
  #header(
    cells: number,
    aps: number,
    lacf: number,
    scf: number,
    ipf: number,
    bt: number,
    ip: string | undefined,
  ): number {
    this.#reserve(this.length + HEADER + cells * CELL + aps * WIFI);
    let ipIndex = -1;
    if (ipf === 1 && ip !== undefined) {
      ipIndex = this.ips.length;
      this.ips.push(ip);
    }
    const input = this.buffer;
    let at = this.length;
    input[at++] = cells;
    input[at++] = aps;
    input[at++] = lacf;
    input[at++] = scf;
    input[at++] = ipf;
    input[at++] = bt;
    input[at++] = ipIndex;
    return at;
  }
}

function writeCell(
  input: Float64Array,
  start: number,
  radio: number,
  mcc: number,
  mnc: number,
  lac: number,
  cid: number,
  signal: number | undefined,
  asu: number | undefined,
  ta: number | undefined,
  psc: number | undefined,
): number {
  let at = start;
  input[at++] = radio;
  input[at++] = mcc;
  input[at++] = mnc;
  input[at++] = lac;
  input[at++] = cid;
  input[at++] = signal ?? Number.NaN;
  input[at++] = asu ?? Number.NaN;
  input[at++] = ta ?? Number.NaN;
  input[at++] = psc ?? Number.NaN;
  return at;
}

function writeAp(
  input: Float64Array,
  start: number,
  bssid: number,
  signal: number | undefined,
  frequency: number | undefined,
): number {
  let at = start;
  input[at++] = bssid;
  input[at++] = signal ?? Number.NaN;
  input[at++] = frequency ?? Number.NaN;
  return at;
}
