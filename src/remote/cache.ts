/**
 * Remote answers kept for a while, keyed by the stations and wishes of a request, least recently
 * used first out. Remote answers cost balance and time; a device standing still asks the same.
 */
import type { LocateRequest } from '../locating/request/index.js';
import type { ProcessResponse } from '../locating/response.js';

/**
 * The canonical key of a normalised request: what changes the remote's answer. Cells keep their
 * order (the first is the serving cell); access points are a set, so they are sorted. Signal
 * levels are left out on purpose: they flicker from scan to scan while the answer for the same
 * stations hardly moves, and with them almost nothing would ever hit.
 */
export function cacheKey(request: LocateRequest): string {
  const cells = request.cells.map((c) => `${c.radio}:${c.mcc}:${c.mnc}:${c.lac}:${c.cid}`).join(',');
  const wifi = request.wifi
    .map((w) => w.bssid)
    .sort((a, b) => a - b)
    .join(',');
  const f = request.fallbacks;
  return [
    cells,
    wifi,
    `${f.lacf}${f.scf}${f.ipf}`,
    f.ipf === 1 ? (request.ip ?? '') : '',
    request.bt,
    request.address,
    request.acceptLanguage ?? '',
  ].join('|');
}

interface Entry {
  response: ProcessResponse;
  expires: number;
}

/** A bounded LRU of remote answers with a time to live. */
export class AnswerCache {
  readonly #entries = new Map<string, Entry>();
  #hits = 0;
  #misses = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** The answer stored under `key` if still fresh (a copy: callers may change it). */
  get(key: string): ProcessResponse | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.expires <= this.now()) {
      if (entry !== undefined) this.#entries.delete(key);
      this.#misses++;
      return undefined;
    }
    // Re-inserting moves the key to the young end of the Map's insertion order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    this.#hits++;
    return structuredClone(entry.response);
  }

  /** Stores a copy of `response`; the least recently used entry leaves when full. */
  set(key: string, response: ProcessResponse): void {
    if (this.ttlMs === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { response: structuredClone(response), expires: this.now() + this.ttlMs });
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }

  /** Entries held, hits and misses so far. */
  stats(): { entries: number; hits: number; misses: number } {
    return { entries: this.#entries.size, hits: this.#hits, misses: this.#misses };
  }
}
