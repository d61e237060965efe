/**
 * Learning: GPS-tagged requests become sightings that overlay the database at once; the
 * overlay is folded into a new database generation (compaction), and an engine switches to the
 * newest generation on reload.
 */
import { type ParseOptions, parseRequest } from '../locating/request/index.js';
import type { NativeCompactSummary } from '../native/binding.js';
import type { NativeHandle } from '../native/handle.js';
import {
  type LearnCounts,
  type LearnSummary,
  type NativeSubmission,
  toSubmission,
  withoutOptedOut,
} from './submissions.js';

/** The learning part of an `Engine`: its methods are the engine's `learn`, `compact`, `reload`. */
export class Learner {
  readonly #handle: NativeHandle;
  readonly #parse: ParseOptions;

  constructor(handle: NativeHandle, parse: ParseOptions) {
    this.#handle = handle;
    this.#parse = parse;
  }

  /**
   * Learns from GPS-tagged `/process` requests (spec 2.2 with `gps`, spec 2.5): every cell and
   * access point of a request is a sighting at its most accurate fix. Learned stations overlay
   * the database at once: the promise resolves after the batch is committed to
   * `DIR/learned.sqlite`, and the next {@link Engine.process} uses them. Requests that fail
   * validation or carry no GPS fix are listed in `rejected`; access points whose `ssid` ends in
   * `_nomap` are never learned. Rejects when the engine was opened without `db`.
   */
  async learn(requests: readonly unknown[]): Promise<LearnSummary> {
    this.#handle.assertOpen();
    const rejected: LearnSummary['rejected'] = [];
    const submissions: NativeSubmission[] = [];
    const now = Date.now();
    requests.forEach((value, index) => {
      const parsed = parseRequest(withoutOptedOut(value), this.#parse);
      if (!parsed.ok) rejected.push({ index, message: parsed.message });
      else if (parsed.request.gps.length === 0) rejected.push({ index, message: 'no gps fix' });
      else submissions.push(toSubmission(parsed.request, now));
    });
    const counts = await this.learnSubmissions(submissions);
    return { accepted: submissions.length, rejected, ...counts };
  }

  /** Learns submissions already validated and encoded (the server's batches); see {@link Engine.learn}. */
  async learnSubmissions(submissions: NativeSubmission[]): Promise<LearnCounts> {
    this.#handle.assertOpen();
    return this.#handle.track(this.#handle.native.learn(submissions));
  }

  /**
   * Folds the learned stations into a new database generation now, off the event loop, and
   * switches to it; requests keep being answered meanwhile. Rejects if one is already running
   * or another process (an import) holds the database.
   */
  async compact(): Promise<NativeCompactSummary> {
    this.#handle.assertOpen();
    return this.#handle.track(this.#handle.native.compact());
  }

  /**
   * Switches to the newest database generation in `manifest.json` (after an external
   * `whereabouts import`, `learn` or sync) and reads what other processes learned; requests in
   * flight finish on the old generation. Cheap when nothing changed.
   */
  reload(): void {
    this.#handle.assertOpen();
    this.#handle.native.reload();
  }
}
