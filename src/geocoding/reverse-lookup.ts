/**
 * The core's reverse lookup as JavaScript values: the country code and the place, with the
 * place's names (strings made once per place and kept) instead of an object built by the
 * binding on every call, which cost more than the lookup itself.
 */
import type { NativeEngine, NativePlace } from '../native.js';

/** What a reverse lookup finds: the country, and its place within 50 km if any. */
export interface ReverseFound {
  /** ISO 3166-1 alpha-2, upper case. */
  readonly countryCode: string;
  /** The place's id in the core (stable while the engine is open), -1 for none. */
  readonly placeId: number;
  readonly place: NativePlace | null;
}

/** A lookup's answer whose place (with its names) is fetched only when read: an answer shaped before needs none. */
class Found implements ReverseFound {
  readonly #lookup: ReverseLookup;
  readonly countryCode: string;
  readonly placeId: number;

  constructor(lookup: ReverseLookup, countryCode: string, placeId: number) {
    this.#lookup = lookup;
    this.countryCode = countryCode;
    this.placeId = placeId;
  }

  get place(): NativePlace | null {
    return this.placeId < 0 ? null : this.#lookup.place(this.placeId);
  }
}

/** Places kept at most; a server answering the whole world keeps its busy places, not all 100,000. */
const MAX_CACHED = 20_000;

/** Reverse lookups over a native engine opened with places (and country polygons). */
export class ReverseLookup {
  readonly #native: NativeEngine;
  readonly #out = new Float64Array(3);
  readonly #places = new Map<number, NativePlace>();
  /** Country codes by their two letters (A-Z, checked by the core): one string per country, not per lookup. */
  readonly #codes: (string | undefined)[] = new Array(26 * 26);

  constructor(nativeEngine: NativeEngine) {
    this.#native = nativeEngine;
  }

  /** The country and place at a point for `zoom` (rules in the core's places.rs); null for none. */
  find(lat: number, lon: number, zoom: number): ReverseFound | null {
    const out = this.#out;
    if (!this.#native.reverseInto(lat, lon, zoom, out)) return null;
    const code = out[0] as number;
    const id = out[1] as number;
    const at = ((code >> 8) - 65) * 26 + (code & 0xff) - 65;
    let countryCode = this.#codes[at];
    if (countryCode === undefined) {
      countryCode = String.fromCharCode(code >> 8, code & 0xff);
      this.#codes[at] = countryCode;
    }
    return new Found(this, countryCode, id < 0 ? -1 : id);
  }

  /** The nearest place within 50 km by distance alone, or null: a baseline for benches. */
  nearest(lat: number, lon: number): NativePlace | null {
    const id = this.#native.nearestPlaceId(lat, lon);
    return id < 0 ? null : this.place(id);
  }

  /** The place with this id, from the cache or the core. */
  place(id: number): NativePlace {
    let p = this.#places.get(id);
    if (p === undefined) {
      if (this.#places.size >= MAX_CACHED) this.#places.clear();
      p = this.#native.place(id);
      this.#places.set(id, p);
    }
    return p;
  }
}
