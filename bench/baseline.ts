/**
 * The speed baseline of the benches: what an app would write without an engine, over the
 * evaluation's station tables ({@link MapBaseline}, src/eval/baselines.ts).
 */
import { cellKey, type MapBaseline } from '../src/eval/baselines.js';

export { MapBaseline } from '../src/eval/baselines.js';

const RADIO_CODES: Record<string, number> = { GSM: 0, CDMA: 1, UMTS: 2, LTE: 3, NBIOT: 4, NR: 5 };

/** The request fields the speed baseline reads. */
interface RawRequest {
  radio?: string;
  mcc?: number;
  mnc?: number;
  cells?: { radio?: string; mcc?: number; mnc?: number; lac?: number; cid?: number; signal?: number }[];
  wifi?: { bssid: string; signal?: number }[];
}

/**
 * Reads the request's fields directly (no spec validation), looks every station up in the
 * Maps and returns the power-weighted mean.
 */
export function rawWeightedMean(b: MapBaseline, request: unknown): { lat: number; lon: number } | undefined {
  const r = request as RawRequest;
  let sw = 0;
  let sLat = 0;
  let sLon = 0;
  for (const c of r.cells ?? []) {
    const radio = RADIO_CODES[(c.radio ?? r.radio ?? '').toUpperCase()] ?? -1;
    const s = b.cells.get(cellKey(radio, c.mcc ?? r.mcc ?? 0, c.mnc ?? r.mnc ?? 0, c.lac ?? 0, c.cid ?? 0));
    if (!s) continue;
    const w = 10 ** (((c.signal ?? -90) + 100) / 10);
    sw += w;
    sLat += w * s.lat;
    sLon += w * s.lon;
  }
  for (const a of r.wifi ?? []) {
    const s = b.wifi.get(Number.parseInt(a.bssid.replace(/[:.-]/g, ''), 16));
    if (!s) continue;
    const w = 10 ** (((a.signal ?? -90) + 100) / 10);
    sw += w;
    sLat += w * s.lat;
    sLon += w * s.lon;
  }
  return sw > 0 ? { lat: sLat / sw, lon: sLon / sw } : undefined;
}
