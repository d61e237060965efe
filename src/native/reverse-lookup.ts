/**
 * The core's reverse lookup as JavaScript values: the country code and the place, with the
 * place's names (strings made once per place and kept) instead of an object built by the
 * binding on every call, which cost more than the lookup itself.
 *
 * The binding answers with one number, the reverse key (`reverseKey`, called through the
 * plain function `reverseKeyFunction` makes):
 * `code * 2^24 + placeId + 1`, with `code` the country code's two ASCII bytes as
 * `256 * first + second` and `placeId + 1` zero for a country without a place within 50 km;
 * -1 for no answer. Callers that remember answers per place (src/reverse.ts) read the key's
 * parts without building an object.
 */
import type { NativeEngine, NativePlace } from './binding.js';
import { REVERSE_KEY_FIRST_CODE, REVERSE_KEY_LAST_CODE, REVERSE_KEY_PLACES } from './contracts.js';

/** What a reverse lookup finds: the country, and its place within 50 km if any. */
export interface ReverseFound {
  /** ISO 3166-1 alpha-2, upper case. */
  readonly countryCode: string;
  /** The place's id in the core (stable while the engine is open), -1 for none. */
  readonly placeId: number;
  readonly place: NativePlace | null;
}

/** The reverse key of no answer. */
export const NO_ANSWER = -1;

/** The place part of a reverse key: ids plus one below 2^24 (whereabouts-core's `wire::KEY_PLACES`). */
const KEY_PLACES = REVERSE_KEY_PLACES;

/** Country codes from `AA` (65 * 256 + 65) to `ZZ`: the core checks that codes are A-Z. */
const FIRST_CODE = REVERSE_KEY_FIRST_CODE;
const LAST_CODE = REVERSE_KEY_LAST_CODE;

/** The place id of a reverse key (not {@link NO_ANSWER}), -1 for none. */
export function placeIdOfKey(key: number): number {
  // a float modulo is a call into C in V8: the floor of the exact division by 2^24 instead
  return key - Math.floor(key / KEY_PLACES) * KEY_PLACES - 1;
}

/** The country of a reverse key (not {@link NO_ANSWER}) as a small index: its code less `AA`'s, 0 to 6425. */
export function countryIndexOfKey(key: number): number {
  return Math.floor(key / KEY_PLACES) - FIRST_CODE;
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
  /** The binding's `reverseKeyFunction`, made on the first lookup (an engine without places has none). */
  #reverseKey: ((lat: number, lon: number, zoom: number) => number) | undefined;
  readonly #places = new Map<number, NativePlace>();
  /** Country code strings by their code number: one string per country, not per lookup. */
  readonly #codes: (string | undefined)[] = new Array(LAST_CODE - FIRST_CODE + 1).fill(undefined);

  constructor(nativeEngine: NativeEngine) {
    this.#native = nativeEngine;
  }

  /** The reverse key (module notes) of the country and place at a point for `zoom` (rules in the core's places.rs). */
  key(lat: number, lon: number, zoom: number): number {
    // a plain function, not the method: a class method call costs napi-rs about 0.3 us
    this.#reverseKey ??= this.#native.reverseKeyFunction();
    return this.#reverseKey(lat, lon, zoom);
  }

  /** The country code (ISO 3166-1 alpha-2, upper case) of a reverse key (not {@link NO_ANSWER}). */
  countryCode(key: number): string {
    const at = countryIndexOfKey(key);
    let countryCode = this.#codes[at];
    if (countryCode === undefined) {
      const code = at + FIRST_CODE;
      countryCode = String.fromCharCode(code >> 8, code & 0xff);
      this.#codes[at] = countryCode;
    }
    return countryCode;
  }

  /** The answer of a reverse key as an object; null for {@link NO_ANSWER}. */
  found(key: number): ReverseFound | null {
    return key < 0 ? null : new Found(this, this.countryCode(key), placeIdOfKey(key));
  }

  /** The country and place at a point for `zoom` (rules in the core's places.rs); null for none. */
  find(lat: number, lon: number, zoom: number): ReverseFound | null {
    return this.found(this.key(lat, lon, zoom));
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
