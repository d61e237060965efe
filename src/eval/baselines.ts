/**
 * The baselines an evaluation runs beside the engine on the same rows: station tables in plain
 * JS Maps (what an app would write without an engine), answering with the serving cell's
 * position or a signal-weighted mean of the known stations; and, when the stations were
 * learned in the same run, the plain centroid of the training observations.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { Engine } from '../engine.js';
import type { LocateRequest } from '../locating/request/index.js';
import type { ObservationFile } from './inputs.js';

/** A station position and its published range. */
export interface BaselineStation {
  lat: number;
  lon: number;
  range: number;
}

/** An answer of a baseline; `accuracy` NaN when the baseline states no radius. */
export interface BaselineAnswer {
  lat: number;
  lon: number;
  accuracy: number;
}

const RADIO_CODES: Record<string, number> = { GSM: 0, CDMA: 1, UMTS: 2, LTE: 3, NBIOT: 4, NR: 5 };

/** Cell map key; radio, mcc, mnc, lac, cid as in {@link LocateRequest} cells. */
export function cellKey(radio: number, mcc: number, mnc: number, lac: number, cid: number): string {
  return `${radio}:${mcc}:${mnc}:${lac}:${cid}`;
}

/** Received power in milliwatts relative to -100 dBm; -90 dBm when the signal is unknown. */
function powerWeight(signal: number | undefined): number {
  return 10 ** (((signal ?? -90) + 100) / 10);
}

/** Station tables loaded from OpenCelliD-format cell CSVs and WiFi station CSVs. */
export class MapBaseline {
  readonly cells = new Map<string, BaselineStation>();
  readonly wifi = new Map<number, BaselineStation>();

  static fromCsv(cellsCsv: string, wifiCsv?: string): MapBaseline {
    const b = new MapBaseline();
    b.addCellsCsv(readFileSync(cellsCsv, 'utf8'));
    if (wifiCsv) b.addWifiCsv(readFileSync(wifiCsv, 'utf8'));
    return b;
  }

  /**
   * Every station of an open engine's database, read through its sync pages (the export
   * format): the tables hold the database as it is, whatever it was built from. Costs memory
   * in proportion to the database (about 100 bytes a station).
   */
  static async fromEngine(engine: Engine): Promise<MapBaseline> {
    const b = new MapBaseline();
    let cursor: string | undefined;
    do {
      const page = await engine.stationChanges({
        since: 0,
        until: 2 ** 32,
        cursor,
        maxStations: 100_000,
        maxScanned: 1_000_000,
      });
      if (page.stations > 0) {
        const text = gunzipSync(page.body).toString('utf8');
        if (page.kind === 'wifi') b.addWifiCsv(text);
        else if (page.kind === 'cells') b.addCellsCsv(text);
      }
      cursor = page.next ?? undefined;
    } while (cursor);
    return b;
  }

  /** Adds the rows of an OpenCelliD export (`radio,mcc,net,area,cell,unit,lon,lat,range,...`). */
  addCellsCsv(text: string): void {
    const lines = text.split('\n');
    for (let i = 1; i < lines.length; i++) {
      const f = (lines[i] as string).split(',');
      if (f.length < 10) continue;
      const radio = RADIO_CODES[(f[0] as string).toUpperCase()];
      if (radio === undefined) continue;
      this.cells.set(cellKey(radio, Number(f[1]), Number(f[2]), Number(f[3]), Number(f[4])), {
        lon: Number(f[6]),
        lat: Number(f[7]),
        range: Number(f[8]),
      });
    }
  }

  /** Adds the rows of a WiFi station CSV (`bssid,lat,lon,range,...`). */
  addWifiCsv(text: string): void {
    const lines = text.split('\n');
    for (let i = 1; i < lines.length; i++) {
      const f = (lines[i] as string).split(',');
      if (f.length < 4) continue;
      const mac = Number.parseInt((f[0] as string).replace(/[:.-]/g, ''), 16);
      this.wifi.set(mac, { lat: Number(f[1]), lon: Number(f[2]), range: Number(f[3]) });
    }
  }

  /** The serving cell's position (the request's first cell), with its range as the radius. */
  serving(r: LocateRequest): BaselineAnswer | undefined {
    const c = r.cells[0];
    if (!c) return undefined;
    const s = this.cells.get(cellKey(c.radio, c.mcc, c.mnc, c.lac, c.cid));
    return s && { lat: s.lat, lon: s.lon, accuracy: s.range };
  }

  /**
   * Mean of every known cell and AP, weighted by received power in milliwatts (-90 dBm when
   * unknown), with the largest range among them as the radius.
   */
  weightedMean(r: LocateRequest): BaselineAnswer | undefined {
    let sw = 0;
    let sLat = 0;
    let sLon = 0;
    let range = 0;
    const add = (s: BaselineStation | undefined, signal: number | undefined) => {
      if (!s) return;
      const w = powerWeight(signal);
      sw += w;
      sLat += w * s.lat;
      sLon += w * s.lon;
      range = Math.max(range, s.range);
    };
    for (const c of r.cells) add(this.cells.get(cellKey(c.radio, c.mcc, c.mnc, c.lac, c.cid)), c.signal);
    for (const w of r.wifi) add(this.wifi.get(w.bssid), w.signal);
    if (sw === 0) return undefined;
    return { lat: sLat / sw, lon: sLon / sw, accuracy: range };
  }
}

/** Sums of the training observations of each station: the centroid baseline. */
export class CentroidBaseline {
  readonly #cells = new Map<string, { lat: number; lon: number; n: number }>();
  readonly #wifi = new Map<number, { lat: number; lon: number; n: number }>();

  /** Adds a training observation of a cell. */
  addCell(radio: number, mcc: number, mnc: number, lac: number, cid: number, lat: number, lon: number): void {
    add(this.#cells, cellKey(radio, mcc, mnc, lac, cid), lat, lon);
  }

  /** Adds a training observation of an access point (BSSID as a 48-bit number). */
  addWifi(bssid: number, lat: number, lon: number): void {
    add(this.#wifi, bssid, lat, lon);
  }

  /** Adds the rows `first` to `end` (exclusive) of an observation file, cells and APs. */
  addRows(f: ObservationFile, first: number, end: number): void {
    const wifi = f.kinds.indexOf('wifi');
    for (let r = first; r < end; r++) {
      const [lat, lon] = [f.lat[r] as number, f.lon[r] as number];
      if (f.kind[r] === wifi) this.addWifi(f.id[r] as number, lat, lon);
      else
        this.addCell(
          f.kind[r] as number,
          f.mcc[r] as number,
          f.mnc[r] as number,
          f.lac[r] as number,
          f.id[r] as number,
          lat,
          lon,
        );
    }
  }

  /**
   * The plain mean of the training observations of every station the request names, each
   * observation counted once; no radius. Undefined when none of them was observed.
   */
  answer(r: LocateRequest): BaselineAnswer | undefined {
    let n = 0;
    let lat = 0;
    let lon = 0;
    const take = (s: { lat: number; lon: number; n: number } | undefined) => {
      if (!s) return;
      n += s.n;
      lat += s.lat;
      lon += s.lon;
    };
    for (const c of r.cells) take(this.#cells.get(cellKey(c.radio, c.mcc, c.mnc, c.lac, c.cid)));
    for (const w of r.wifi) take(this.#wifi.get(w.bssid));
    return n === 0 ? undefined : { lat: lat / n, lon: lon / n, accuracy: Number.NaN };
  }
}

function add<K>(m: Map<K, { lat: number; lon: number; n: number }>, k: K, lat: number, lon: number): void {
  const s = m.get(k);
  if (s) {
    s.lat += lat;
    s.lon += lon;
    s.n++;
  } else m.set(k, { lat, lon, n: 1 });
}
