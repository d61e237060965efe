/**
 * Live learning: GPS-tagged `/process` requests turned into the submissions the core learns
 * into its overlay (crates/whereabouts-core/src/learn/overlay.rs), and the batcher the server
 * feeds them through. Rules and thresholds: docs/learning.md.
 */

import type { GpsObservation, LocateRequest } from '../locating/request/index.js';
import { tokenHash } from '../observations/store.js';
import type { RemoteObservation } from '../remote/index.js';

/** A submission as the core reads it: the same JSON columns as observations.sqlite (docs/tokens.md). */
export interface NativeSubmission {
  /** ms since the epoch; the time of a fix without its own timestamp. */
  receivedAt: number;
  gps: string;
  cells: string;
  wifi: string;
  /**
   * Who submitted it: the hex SHA-256 of the token (`tokenHash`). Absent for the operator's own
   * data (`engine.learn`), which is trusted; a submission with a source is one voice among the
   * tokens that must agree before a station moves, capped in what it adds (docs/learning.md).
   */
  source?: string;
  /** The device id the submission named (spec 2.2 `id`). */
  device?: string;
}

/** Where a submission came from: a token (and the device id it named). */
export interface SubmissionSource {
  token: string;
  deviceId?: string | undefined;
}

/**
 * The source remote answers are learned under: one untrusted source, so that answers a remote
 * service gave for callers' requests never move or block a station on their own.
 */
export const REMOTE_SOURCE = tokenHash('whereabouts:remote');

/** What a learning run or batch did with its observations (counts of stations unless named otherwise). */
export interface LearnCounts {
  /** Station sightings learned. */
  observations: number;
  /** Sightings dropped as inconsistent with the rest of their station's. */
  outliers: number;
  /** Sightings beyond what their token (10) or device (3) may add to one station. */
  capped: number;
  /** Sightings of quarantined tokens: held as suspects, not learned. */
  quarantined: number;
  /** Stations new to the engine. */
  added: number;
  /** Stations whose estimate (the database's or an earlier learned one) was refined. */
  refined: number;
  /** Stations found moved; `blocked` are withdrawn until their block ends, `relearned` published again. */
  moved: number;
  relearned: number;
  blocked: number;
  seconds: number;
}

/** What `Engine.learn` did: the requests taken, those refused and why, and the counts. */
export interface LearnSummary extends LearnCounts {
  accepted: number;
  rejected: { index: number; message: string }[];
}

/** SSIDs whose owners opted out of location services: never learned (the `_nomap` convention). */
export function optedOut(ssid: unknown): boolean {
  return typeof ssid === 'string' && (ssid.endsWith('_nomap') || ssid.endsWith('_optout'));
}

/** Whether a request body may name an opted-out network (a cheap test before reading it twice). */
export function mentionsOptOut(text: string): boolean {
  return text.includes('_nomap') || text.includes('_optout');
}

/**
 * The request without its opted-out access points. `/process` has no `ssid` field, but clients
 * that scan send it along; an access point whose network opted out is dropped before anything
 * is learned from the request.
 */
export function withoutOptedOut(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const wifi = (value as { wifi?: unknown }).wifi;
  if (!Array.isArray(wifi)) return value;
  const kept = wifi.filter(
    (ap) => !(typeof ap === 'object' && ap !== null && optedOut((ap as { ssid?: unknown }).ssid)),
  );
  return kept.length === wifi.length ? value : { ...value, wifi: kept };
}

/**
 * A validated request with GPS fixes as the core's submission; `from` names the token (and
 * device) that sent it, absent for the operator's own data.
 */
export function toSubmission(
  request: Pick<LocateRequest, 'cells' | 'wifi'> & { gps: GpsObservation[] },
  receivedAt: number,
  from?: SubmissionSource,
): NativeSubmission {
  const submission: NativeSubmission = {
    receivedAt,
    gps: JSON.stringify(request.gps),
    cells: JSON.stringify(request.cells),
    wifi: JSON.stringify(request.wifi),
  };
  if (from !== undefined) {
    submission.source = tokenHash(from.token);
    if (from.deviceId !== undefined) submission.device = from.deviceId;
  }
  return submission;
}

/**
 * A remote service's located answer as a submission: its position stands for the device's, with
 * the remote's accuracy radius as the fix accuracy, which is what makes it a low-weight
 * observation beside real GPS fixes (docs/remote.md).
 */
export function remoteSubmission(observation: RemoteObservation): NativeSubmission {
  const { cells, wifi, lat, lon, accuracy, receivedAt } = observation;
  const submission = toSubmission(
    { cells: [...cells], wifi: [...wifi], gps: [{ lat, lon, accuracy, source: 'remote' }] },
    receivedAt,
  );
  submission.source = REMOTE_SOURCE;
  return submission;
}

/**
 * Groups submissions that arrive while a batch is being learned into the next batch: one
 * learning transaction per batch, however many requests wait, and each caller's promise
 * settles once its submission is committed and visible to the next request.
 */
export class LearnBatcher {
  #queue: { submission: NativeSubmission; done: (error?: Error) => void }[] = [];
  #busy = false;
  #scheduled = false;

  constructor(
    private readonly learn: (batch: NativeSubmission[]) => Promise<unknown>,
    private readonly maxBatch = 1024,
  ) {}

  /** Queues one submission; resolves when the batch holding it is learned. */
  submit(submission: NativeSubmission): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ submission, done: (error) => (error ? reject(error) : resolve()) });
      this.#schedule();
    });
  }

  /** Resolves once everything queued so far is learned (or has failed). */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#busy) await new Promise((r) => setTimeout(r, 5));
  }

  #schedule(): void {
    if (this.#busy || this.#scheduled || this.#queue.length === 0) return;
    this.#scheduled = true;
    // One event-loop turn collects the submissions of requests handled together.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#busy) return;
    const batch = this.#queue.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    this.#busy = true;
    try {
      await this.learn(batch.map((b) => b.submission));
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.done(err as Error);
    } finally {
      this.#busy = false;
      this.#schedule();
    }
  }
}
