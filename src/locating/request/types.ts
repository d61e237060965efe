/** The shape of a validated `/process` request (spec 2.2 to 2.7), and the limits of its lists. */

/** The most cell objects a request may carry unless the account's limit was raised (spec 8). */
export const DEFAULT_MAX_CELLS = 7;

/** The most WiFi objects a request may carry (spec 2.4, 8). */
export const MAX_WIFI = 15;

/** The most GPS objects accepted in one request (the spec is silent; this bounds the work). */
export const MAX_GPS = 1000;

/** One normalised cell observation. */
export interface CellObservation {
  /** A {@link RadioCode}, or {@link UNKNOWN_RADIO} when no radio was given anywhere. */
  radio: number;
  /** 0-999, or {@link UNKNOWN_MCC} for a CDMA cell sent without one. */
  mcc: number;
  /** MNC, or the SID for CDMA. */
  mnc: number;
  /** LAC, TAC, or the NID for CDMA. */
  lac: number;
  /** Cell id; up to 36 bits for NR, which a JS number holds exactly. */
  cid: number;
  signal?: number;
  asu?: number;
  ta?: number;
  psc?: number;
}

/** One normalised WiFi access point. */
export interface WifiObservation {
  /** The 48-bit MAC address as an integer. */
  bssid: number;
  signal?: number;
  frequency?: number;
  channel?: number;
  snr?: number;
}

/** Fallback switches (spec 2.6) with defaults applied. */
export interface Fallbacks {
  lacf: 0 | 1 | 2;
  scf: 0 | 1;
  ipf: 0 | 1;
}

/** One GPS observation (spec 2.5). */
export interface GpsObservation {
  source?: string;
  lat: number;
  lon: number;
  accuracy?: number;
  altitude?: number;
  altitudeAccuracy?: number;
  speed?: number;
  heading?: number;
  /** ms since the epoch. */
  timestamp?: number;
}

/** A validated `/process` request with every default applied. */
export interface LocateRequest {
  token?: string;
  /** Device id, lower-cased. */
  id?: string;
  /** Valid cells only, in request order: the first one is the serving cell. */
  cells: CellObservation[];
  /** Valid, distinct access points; empty when fewer than 2 were usable. */
  wifi: WifiObservation[];
  ip?: string;
  fallbacks: Fallbacks;
  bt: 0 | 1 | 2;
  address: 0 | 1 | 2;
  acceptLanguage?: string;
  metadata: 0 | 1;
  geolocation: 0 | 1;
  gps: GpsObservation[];
  gpsSandbox: 0 | 1;
}

/** The outcome of parsing: a request, or one of the spec 7.1 messages. */
export type ParseResult = { ok: true; request: LocateRequest } | { ok: false; message: string };

/** Options that depend on who is asking. */
export interface ParseOptions {
  /** Most cell objects accepted; default 7 (spec: raisable per account). */
  maxCells?: number;
  /** Whether a missing token is an error; default false (the library has no tokens, the server has). */
  requireToken?: boolean;
}
