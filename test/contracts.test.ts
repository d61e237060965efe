/**
 * The contracts shared with the Rust side (src/native/contracts.ts, generated from
 * crates/whereabouts-node/src/contracts.rs) agree with the built addon's exported constants,
 * and the TypeScript modules use them. The cargo test `contracts_ts_is_current` checks the
 * file against the Rust source; this one catches an addon built from another source.
 */
import { describe, expect, it } from 'vitest';
import { RadioCode as requestRadioCode } from '../src/locating/request/index.js';
import { native } from '../src/native/binding.js';
import * as contracts from '../src/native/contracts.js';
import { placeIdOfKey } from '../src/native/reverse-lookup.js';
import { ANSWER, FALLBACK_NAMES } from '../src/native/wire.js';

describe('contracts shared with the native addon', () => {
  it('the generated constants are the addon’s', () => {
    const addon = native();
    const ours = {
      WIRE_HEADER: contracts.WIRE_HEADER,
      WIRE_CELL: contracts.WIRE_CELL,
      WIRE_WIFI: contracts.WIRE_WIFI,
      WIRE_ANSWER: contracts.WIRE_ANSWER,
      REVERSE_KEY_PLACES: contracts.REVERSE_KEY_PLACES,
      REVERSE_KEY_FIRST_CODE: contracts.REVERSE_KEY_FIRST_CODE,
      REVERSE_KEY_LAST_CODE: contracts.REVERSE_KEY_LAST_CODE,
    };
    const theirs = {
      WIRE_HEADER: addon.WIRE_HEADER,
      WIRE_CELL: addon.WIRE_CELL,
      WIRE_WIFI: addon.WIRE_WIFI,
      WIRE_ANSWER: addon.WIRE_ANSWER,
      REVERSE_KEY_PLACES: addon.REVERSE_KEY_PLACES,
      REVERSE_KEY_FIRST_CODE: addon.REVERSE_KEY_FIRST_CODE,
      REVERSE_KEY_LAST_CODE: addon.REVERSE_KEY_LAST_CODE,
    };
    expect(ours).toEqual(theirs);
  });

  it('the modules use the generated constants', () => {
    expect(ANSWER).toBe(native().WIRE_ANSWER);
    expect(FALLBACK_NAMES).toBe(contracts.FALLBACK_NAMES);
    expect(requestRadioCode).toBe(contracts.RadioCode);
    expect(placeIdOfKey(native().REVERSE_KEY_PLACES * (68 * 256 + 69) + 42)).toBe(41);
  });
});
