/**
 * The baselines every benchmark and evaluation runs beside the engine: station tables in
 * plain JS Maps (what an app would write without us), answering with the serving cell's
 * position or a signal-weighted mean of the known stations.
 */
import { readFileSync } from 'node:fs';
import type { LocateRequest } from '../src/locating/request/index.js';

/** A station position and its published range. */
export interface BaselineStation {
  lat: number;
  lon: number;
  range: number;
}

/** An answer of a baseline. */
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

/** Station tables loaded from an OpenCelliD-format cell CSV and a WiFi CSV. */
export class MapBaseline {
  readonly cells = new Map<string, BaselineStation>();
  readonly wifi = new Map<number, BaselineStation>();

  static fromCsv(cellsCsv: string, wifiCsv?: string): MapBaseline {
    const b = new MapBaseline();
    const lines = readFileSync(cellsCsv, 'utf8').split('\n');
    for (let i = 1; i < lines.length; i++) {
      const f = (lines[i] as string).split(',');
      if (f.length < 10) continue;
      const radio = RADIO_CODES[(f[0] as string).toUpperCase()];
      if (radio === undefined) continue;
      b.cells.set(cellKey(radio, Number(f[1]), Number(f[2]), Number(f[3]), Number(f[4])), {
        lon: Number(f[6]),
        lat: Number(f[7]),
        range: Number(f[8]),
      });
    }
    if (wifiCsv) {
      const wl = readFileSync(wifiCsv, 'utf8').split('\n');
      for (let i = 1; i < wl.length; i++) {
        const f = (wl[i] as string).split(',');
        if (f.length < 4) continue;
        const mac = Number.parseInt((f[0] as string).replace(/[:.-]/g, ''), 16);
        b.wifi.set(mac, { lat: Number(f[1]), lon: Number(f[2]), range: Number(f[3]) });
      }
    }
    return b;
  }

  /** The serving cell's position, with its range as the radius. */
  serving(r: LocateRequest): BaselineAnswer | undefined {
    const c = r.cells[0];
    if (!c) return undefined;
    const s = this.cells.get(cellKey(c.radio, c.mcc, c.mnc, c.lac, c.cid));
    return s && { lat: s.lat, lon: s.lon, accuracy: s.range };
  }

  /** Mean of every known cell and AP, weighted by received power in milliwatts. */
  weightedMean(r: LocateRequest): BaselineAnswer | undefined {
    let sw = 0;
    let sLat = 0;
    let sLon = 0;
    let range = 0;
    const add = (s: BaselineStation | undefined, signal: number | undefined) => {
      if (!s) return;
      const w = 10 ** (((signal ?? -90) + 100) / 10);
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

  /**
   * The speed baseline: what an app would write without an engine. It reads the request's
   * fields directly (no spec validation), looks every station up in the Maps and returns
   * the power-weighted mean.
   */
  process(request: unknown): BaselineAnswer | undefined {
    const r = request as RawRequest;
    let sw = 0;
    let sLat = 0;
    let sLon = 0;
    for (const c of r.cells ?? []) {
      const radio = RADIO_CODES[(c.radio ?? r.radio ?? '').toUpperCase()] ?? -1;
      const s = this.cells.get(
        cellKey(radio, c.mcc ?? r.mcc ?? 0, c.mnc ?? r.mnc ?? 0, c.lac ?? 0, c.cid ?? 0),
      );
      if (!s) continue;
      const w = 10 ** (((c.signal ?? -90) + 100) / 10);
      sw += w;
      sLat += w * s.lat;
      sLon += w * s.lon;
    }
    for (const a of r.wifi ?? []) {
      const s = this.wifi.get(Number.parseInt(a.bssid.replace(/[:.-]/g, ''), 16));
      if (!s) continue;
      const w = 10 ** (((a.signal ?? -90) + 100) / 10);
      sw += w;
      sLat += w * s.lat;
      sLon += w * s.lon;
    }
    return sw > 0 ? { lat: sLat / sw, lon: sLon / sw, accuracy: 0 } : undefined;
  }
}

/** The request fields the speed baseline reads. */
interface RawRequest {
  radio?: string;
  mcc?: number;
  mnc?: number;
  cells?: { radio?: string; mcc?: number; mnc?: number; lac?: number; cid?: number; signal?: number }[];
  wifi?: { bssid: string; signal?: number }[];
}
