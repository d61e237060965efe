/**
 * Workers admit and charge through the primary (src/server/ledger.ts): an admission counts
 * the call against the token's windows once, and the admitted charge that follows does not
 * count it again.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { LedgerClient, serveLedger } from '../src/server/ledger.js';
import { TokenStore } from '../src/tokens/index.js';
import { tempDir } from './temp-dirs.js';

/** Two ends of an in-process IPC channel. */
function channelPair() {
  const a = new EventEmitter();
  const b = new EventEmitter();
  const end = (self: EventEmitter, other: EventEmitter) => ({
    send: (m: unknown) => {
      setImmediate(() => other.emit('message', structuredClone(m)));
      return true;
    },
    on: (event: 'message', listener: (m: unknown) => void) => self.on(event, listener),
    connected: true,
  });
  return { primary: end(a, b), worker: end(b, a) };
}

const stores: TokenStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

describe('the ledger over IPC', () => {
  it('admits within the limits, then charges admitted calls once without counting them again', async () => {
    const dir = tempDir('wb-ledger-');
    const clock = Date.UTC(2030, 0, 1, 12, 0, 0, 100);
    const primary = TokenStore.open(dir, { now: () => clock });
    const reader = TokenStore.open(dir, { now: () => clock });
    stores.push(primary, reader);
    const { primary: p, worker: w } = channelPair();
    serveLedger(primary, p);
    const client = new LedgerClient(reader, w);
    const token = primary.create({ perSecond: 3, geocodingPerDay: 5 }).token;

    const admitted = await Promise.all(Array.from({ length: 5 }, () => client.admit(token, 'geocoding')));
    expect(admitted.map((a) => (a.ok ? 'ok' : a.reason))).toEqual([
      'ok',
      'ok',
      'ok',
      'RATELIMITED_SECOND',
      'RATELIMITED_SECOND',
    ]);
    // Three admitted calls in a second of three: their charges still go through.
    const charged = await Promise.all(
      Array.from({ length: 3 }, () => client.charge(token, 'geocoding', { admitted: true })),
    );
    expect(charged.map((c) => c.ok)).toEqual([true, true, true]);
    expect(reader.balance(token, 'geocoding')).toBe(2);
    // Without admission the charge counts against the window itself: refused here.
    expect(await client.charge(token, 'geocoding')).toMatchObject({
      ok: false,
      reason: 'RATELIMITED_SECOND',
    });
    expect(await client.admit('no-such-token')).toMatchObject({ ok: false, reason: 'INVALID_TOKEN' });
  });
});
