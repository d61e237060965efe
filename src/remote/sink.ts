/**
 * The narrow hook through which remote answers can become low-weight observations of the
 * stations a request saw (for the learning overlay; wired by whoever owns learning).
 */
import type { CellObservation, LocateRequest, WifiObservation } from '../locating/request/index.js';

/** A located answer of the remote service, as an observation of the request's stations. */
export interface RemoteObservation {
  /** The request's valid cells, serving cell first (normalised: numeric radio, mcc, mnc, lac, cid). */
  cells: readonly CellObservation[];
  /** The request's valid access points (BSSIDs as 48-bit integers). */
  wifi: readonly WifiObservation[];
  lat: number;
  lon: number;
  /** The remote's accuracy radius in metres. */
  accuracy: number;
  /** When the answer arrived (ms since the epoch). */
  receivedAt: number;
  /** The endpoint that answered. */
  url: string;
}

/**
 * Called once for each fresh remote answer that located the request from its stations: never for
 * cached answers (they would count the same answer twice), errors, or answers a fallback
 * (`lacf`, `scf`, `ipf`) produced, which say nothing about where the stations are. The hook runs
 * after the answer is chosen and must not block; what it throws is ignored.
 */
export type RemoteAnswerHook = (request: LocateRequest, observation: RemoteObservation) => void;
