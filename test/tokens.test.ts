/**
 * Tokens: settings and their limits, restrictions, daily balances, rate limits, device slots,
 * and the promise behind metering: no charge lost or counted twice under concurrency, across
 * processes, or when a process is killed with SIGKILL.
 */
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ipAllowed,
  newToken,
  PG_TOKENS_SCHEMA_VERSION,
  PgTokenStore,
  referrerAllowed,
  TokenError,
  type TokenInput,
  type TokenStorage,
  TokenStore,
  utcDay,
} from '../src/tokens/index.js';
import { freshDatabase } from './pg.js';
import { tempDir } from './temp-dirs.js';

const root = join(import.meta.dirname, '..');
const tokensModule = join(root, 'src', 'tokens', 'index.ts');

const open: TokenStore[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

/** A store in a new directory, closed after the test; `clock.now` is the time it sees. */
function store(options: { cacheMs?: number; dir?: string } = {}) {
  const dir = options.dir ?? tempDir('wb-tokens-');
  const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0) };
  const s = TokenStore.open(dir, { cacheMs: options.cacheMs ?? 0, now: () => clock.now });
  open.push(s);
  return { s, dir, clock };
}

function usedInFile(dir: string, token: string, service = 'geolocation'): number {
  const db = new Database(join(dir, 'tokens.sqlite'), { readonly: true });
  try {
    const row = db
      .prepare<[string, string], { n: number }>(
        'SELECT coalesce(sum(used), 0) AS n FROM usage WHERE token = ? AND service = ?',
      )
      .get(token, service);
    return row?.n ?? 0;
  } finally {
    db.close();
  }
}

/** A store of one backend, with what the suite needs to look behind it. */
interface Opened {
  s: TokenStorage;
  clock: { now: number };
  /** Another store on the same data (a second server, or a reopened file). */
  reopen: () => Promise<TokenStorage>;
  /** Units used by a token for a service, summed over days, as stored. */
  used: (token: string, service?: string) => Promise<number>;
}

interface Backend {
  name: string;
  open: () => Promise<Opened>;
}

const storages: TokenStorage[] = [];
afterEach(async () => {
  for (const s of storages.splice(0)) await s.close();
});

const backends: Backend[] = [
  {
    name: 'SQLite',
    open: async () => {
      const { s, dir, clock } = store();
      return {
        s,
        clock,
        reopen: async () => {
          const again = TokenStore.open(dir, { cacheMs: 0 });
          open.push(again);
          return again;
        },
        used: async (token, service) => usedInFile(dir, token, service),
      };
    },
  },
  {
    name: 'PostgreSQL',
    open: async () => {
      const url = await freshDatabase();
      const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0) };
      const s = await PgTokenStore.open(url, { now: () => clock.now });
      storages.push(s);
      return {
        s,
        clock,
        reopen: async () => {
          const again = await PgTokenStore.open(url, { now: () => clock.now });
          storages.push(again);
          return again;
        },
        used: (token, service) => usedInPg(url, token, service),
      };
    },
  },
];

async function usedInPg(url: string, token: string, service = 'geolocation'): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ n: string }>(
      'SELECT coalesce(sum(used), 0) AS n FROM token_usage WHERE token = $1 AND service = $2',
      [token, service],
    );
    return Number(r.rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

async function refusal(s: TokenStorage, input: TokenInput, pattern: RegExp): Promise<void> {
  let error: unknown;
  try {
    await s.create(input);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(TokenError);
  expect((error as TokenError).code).toBe('INVALID');
  expect((error as Error).message).toMatch(pattern);
}

describe.each(backends)('token settings ($name)', (backend) => {
  it('creates a token with documented defaults and a 32-byte base64url secret', async () => {
    const { s, clock } = await backend.open();
    const t = await s.create({});
    expect(t.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(t).toMatchObject({
      active: true,
      geolocationPerDay: 10_000,
      geocodingPerDay: 5_000,
      scopes: ['geocoding:forward', 'geocoding:reverse'],
      services: ['maps', 'static'],
      referrers: [],
      ips: [],
      gps: false,
      createdAt: clock.now,
      updatedAt: clock.now,
    });
    expect(t.perSecond).toBeUndefined();
    expect(t.perMinute).toBeUndefined();
    expect(t.slots).toBeUndefined();
    expect((await s.create({})).token).not.toBe(t.token);
  });

  it('updates, clears with null, revokes, lists, and keeps everything across reopening', async () => {
    const { s, clock, reopen } = await backend.open();
    const t = await s.create({ label: 'app', perSecond: 5, slots: 3, referrers: ['*example.com*'] });
    clock.now += 1000;
    const u = await s.update(t.token, { perSecond: null, perMinute: 60, gps: true, ips: ['10.0.0.0/8'] });
    expect(u).toMatchObject({ label: 'app', perMinute: 60, gps: true, slots: 3, ips: ['10.0.0.0/8'] });
    expect(u.perSecond).toBeUndefined();
    expect(u.referrers).toEqual(['*example.com*']);
    expect(u.updatedAt).toBe(t.createdAt + 1000);
    const r = await s.revoke(t.token);
    expect(r.active).toBe(false);
    const other = await s.create({ geocodingPerDay: 0 });
    expect((await s.list()).map((x) => x.token)).toEqual([t.token, other.token]);
    await s.close();
    const again = await reopen();
    expect(again.get(t.token)).toEqual(r);
    expect(again.get(other.token)?.geocodingPerDay).toBe(0);
    expect(await again.list()).toEqual([r, other]);
  });

  it('refuses settings beyond the limits with messages that say what and the limit', async () => {
    const { s } = await backend.open();
    const eleven = Array.from({ length: 11 }, (_, i) => `https://site${i}.example/`);
    await refusal(s, { referrers: eleven }, /11 referrer patterns; a token may have at most 10/);
    const six = ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4', '5.5.5.5', '6.6.6.6'];
    await refusal(s, { ips: six }, /6 IP entries; a token may have at most 5/);
    await refusal(s, { ips: ['10.0.0.0/33'] }, /prefix length over 32/);
    await refusal(s, { ips: ['2001:db8::/129'] }, /prefix length over 128/);
    await refusal(s, { ips: ['10.0.0/8'] }, /not an IPv4 or IPv6 address/);
    await refusal(s, { ips: ['example.com'] }, /not an IPv4 or IPv6 address/);
    await refusal(s, { geolocationPerDay: -1 }, /geolocation per day must be a whole number of 0 or more/);
    await refusal(s, { geocodingPerDay: 1.5 }, /geocoding per day/);
    await refusal(s, { perSecond: 0 }, /per-second limit must be a whole number of 1 or more/);
    await refusal(s, { perMinute: -3 }, /per-minute limit/);
    await refusal(s, { slots: -1 }, /device slots/);
    await refusal(s, { scopes: ['geocoding:everything' as never] }, /unknown scope "geocoding:everything"/);
    await refusal(s, { services: ['tiles' as never] }, /unknown service "tiles"; services are maps, static/);
    await refusal(s, { referrers: ['https://a.*.com/'] }, /"\*" in the middle/);
    await refusal(s, { referrers: [''] }, /empty referrer pattern/);
    expect(await s.list()).toEqual([]);
    // Exactly at the limits is fine, and duplicates do not count twice.
    const ok = await s.create({
      referrers: [...eleven.slice(0, 10), eleven[0] as string],
      ips: six.slice(0, 5),
    });
    expect(ok.referrers).toHaveLength(10);
    expect(ok.ips).toHaveLength(5);
    await expect(Promise.resolve().then(() => s.update(ok.token, { ips: six }))).rejects.toThrow(/at most 5/);
    expect(s.get(ok.token)?.ips).toHaveLength(5);
  });

  it('reports an unknown token as NOT_FOUND without showing it', async () => {
    const { s } = await backend.open();
    const secret = 'UnknownTokenThatShouldNotBeEchoed';
    for (const op of [() => s.update(secret, { gps: true }), () => s.revoke(secret)]) {
      try {
        await op();
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(TokenError);
        expect((err as TokenError).code).toBe('NOT_FOUND');
        expect((err as Error).message).not.toContain(secret);
      }
    }
    expect(s.get(secret)).toBeUndefined();
  });
});

describe('token settings (SQLite only)', () => {
  it('keeps the file readable by its owner only', () => {
    const { s, dir } = store();
    s.create({});
    // The file holds the secrets: its owner alone may read it.
    expect(statSync(join(dir, 'tokens.sqlite')).mode & 0o777).toBe(0o600);
  });
  it('caches lookups for cacheMs; charges see changes at once', async () => {
    const { s, dir, clock } = store({ cacheMs: 2000 });
    const t = s.create({});
    expect(s.get(t.token)?.active).toBe(true);
    // Another process (the CLI) revokes the token.
    const admin = TokenStore.open(dir, { cacheMs: 0 });
    open.push(admin);
    admin.revoke(t.token);
    expect(s.get(t.token)?.active).toBe(true);
    expect(await s.charge(t.token, 'geolocation')).toMatchObject({ ok: false, reason: 'INACTIVE_TOKEN' });
    clock.now += 2001;
    expect(s.get(t.token)?.active).toBe(false);
    // A token created elsewhere after a miss is found once the cached miss expires.
    const created = admin.create({});
    expect(admin.get(created.token)).toBeDefined();
  });
});

describe('referrer patterns (spec 5.4)', () => {
  it('matches contains, prefix, suffix and whole text', () => {
    expect(referrerAllowed(['*example.com*'], 'https://www.example.com/page')).toBe(true);
    expect(referrerAllowed(['*example.com*'], 'https://example.org/example.com')).toBe(true);
    expect(referrerAllowed(['*example.com*'], 'https://example.org/')).toBe(false);
    expect(referrerAllowed(['https://example.com/*'], 'https://example.com/maps/1')).toBe(true);
    expect(referrerAllowed(['https://example.com/*'], 'https://evil.com/https://example.com/')).toBe(false);
    expect(referrerAllowed(['*.example.com/'], 'https://app.example.com/')).toBe(true);
    expect(referrerAllowed(['*.example.com/'], 'https://app.example.com/x')).toBe(false);
    expect(referrerAllowed(['https://example.com/'], 'https://example.com/')).toBe(true);
    expect(referrerAllowed(['https://example.com/*'], 'https://example.com/')).toBe(true);
  });

  it('needs the trailing slash exactly as written, and is case-sensitive', () => {
    expect(referrerAllowed(['https://example.com/'], 'https://example.com')).toBe(false);
    expect(referrerAllowed(['https://example.com'], 'https://example.com/')).toBe(false);
    expect(referrerAllowed(['https://example.com'], 'https://example.com')).toBe(true);
    expect(referrerAllowed(['*example.com*'], 'https://EXAMPLE.com/')).toBe(false);
    expect(referrerAllowed(['https://Example.com/'], 'https://example.com/')).toBe(false);
  });

  it('allows anything with an empty list; refuses a missing referrer against a list', () => {
    expect(referrerAllowed([], undefined)).toBe(true);
    expect(referrerAllowed([], 'https://anything/')).toBe(true);
    expect(referrerAllowed(['*example.com*'], undefined)).toBe(false);
    expect(referrerAllowed(['*example.com*'], '')).toBe(false);
    expect(referrerAllowed(['https://a.com/', '*b.org*'], 'http://x.b.org/')).toBe(true);
    expect(referrerAllowed(['*'], 'https://anything/')).toBe(true);
  });
});

describe('IP restrictions (spec 5.5)', () => {
  it('matches IPv4 addresses and CIDRs', () => {
    expect(ipAllowed(['203.0.113.7'], '203.0.113.7')).toBe(true);
    expect(ipAllowed(['203.0.113.7'], '203.0.113.8')).toBe(false);
    expect(ipAllowed(['10.0.0.0/8'], '10.255.1.2')).toBe(true);
    expect(ipAllowed(['10.0.0.0/8'], '11.0.0.1')).toBe(false);
    expect(ipAllowed(['192.168.1.0/24', '172.16.0.0/12'], '172.31.255.255')).toBe(true);
    expect(ipAllowed(['0.0.0.0/0'], '8.8.8.8')).toBe(true);
  });

  it('matches IPv6 addresses and CIDRs, and never crosses families', () => {
    expect(ipAllowed(['2001:db8::1'], '2001:0db8:0:0::1')).toBe(true);
    expect(ipAllowed(['2001:db8::/32'], '2001:db8:ffff::1')).toBe(true);
    expect(ipAllowed(['2001:db8::/32'], '2001:db9::1')).toBe(false);
    expect(ipAllowed(['2001:db8::/32'], '10.0.0.1')).toBe(false);
    expect(ipAllowed(['10.0.0.0/8'], '2001:db8::1')).toBe(false);
    expect(ipAllowed(['fe80::/10'], 'fe80::1%eth0')).toBe(true);
  });

  it('checks IPv4-mapped IPv6 addresses as IPv4, both as caller and as rule', () => {
    expect(ipAllowed(['10.0.0.0/8'], '::ffff:10.1.2.3')).toBe(true);
    expect(ipAllowed(['10.0.0.0/8'], '::ffff:a01:203')).toBe(true);
    expect(ipAllowed(['10.0.0.0/8'], '::ffff:11.1.2.3')).toBe(false);
    expect(ipAllowed(['::ffff:10.0.0.0/104'], '10.9.9.9')).toBe(true);
    expect(ipAllowed(['::ffff:192.0.2.1'], '192.0.2.1')).toBe(true);
  });

  it('allows any address with an empty list and refuses a garbled caller address otherwise', () => {
    expect(ipAllowed([], 'not an ip')).toBe(true);
    expect(ipAllowed(['10.0.0.0/8'], 'not an ip')).toBe(false);
    expect(ipAllowed(['10.0.0.0/8'], '')).toBe(false);
  });
});

describe.each(backends)('balances and limits ($name)', (backend) => {
  it('charges each service against its own daily balance and reports what remains', async () => {
    const { s } = await backend.open();
    const t = await s.create({ geolocationPerDay: 3, geocodingPerDay: 1 });
    expect(await s.balance(t.token, 'geolocation')).toBe(3);
    expect(await s.charge(t.token, 'geolocation')).toEqual({ ok: true, balance: 2 });
    expect(await s.charge(t.token, 'geolocation', { units: 2 })).toEqual({ ok: true, balance: 0 });
    expect(await s.charge(t.token, 'geolocation')).toEqual({
      ok: false,
      reason: 'RATELIMITED_DAY',
      balance: 0,
    });
    expect(await s.charge(t.token, 'geocoding')).toEqual({ ok: true, balance: 0 });
    expect(await s.balance(t.token, 'geocoding')).toBe(0);
    expect(await s.charge('nope', 'geolocation')).toEqual({ ok: false, reason: 'INVALID_TOKEN', balance: 0 });
    await s.revoke(t.token);
    expect(await s.charge(t.token, 'geocoding')).toMatchObject({ ok: false, reason: 'INACTIVE_TOKEN' });
    await expect(s.charge(t.token, 'geolocation', { units: 0 })).rejects.toThrow(/positive integer/);
  });

  it('resets the daily balance at 00:00 UTC', async () => {
    const { s, clock } = await backend.open();
    const t = await s.create({ geolocationPerDay: 2 });
    clock.now = Date.UTC(2026, 5, 30, 23, 59, 59, 999);
    await s.charge(t.token, 'geolocation');
    await s.charge(t.token, 'geolocation');
    expect(await s.charge(t.token, 'geolocation')).toMatchObject({ ok: false, reason: 'RATELIMITED_DAY' });
    expect(await s.balance(t.token, 'geolocation')).toBe(0);
    clock.now = Date.UTC(2026, 6, 1, 0, 0, 0, 0);
    expect(await s.balance(t.token, 'geolocation')).toBe(2);
    expect(await s.charge(t.token, 'geolocation')).toEqual({ ok: true, balance: 1 });
    expect(utcDay(clock.now) - utcDay(clock.now - 1)).toBe(1);
  });

  it('raising the daily allowance mid-day raises the balance; lowering it floors at 0', async () => {
    const { s } = await backend.open();
    const t = await s.create({ geolocationPerDay: 5 });
    await s.charge(t.token, 'geolocation', { units: 4 });
    await s.update(t.token, { geolocationPerDay: 10 });
    expect(await s.balance(t.token, 'geolocation')).toBe(6);
    await s.update(t.token, { geolocationPerDay: 2 });
    expect(await s.balance(t.token, 'geolocation')).toBe(0);
  });

  it('enforces the per-second limit in clock-aligned seconds, counting only allowed calls', async () => {
    const { s, clock } = await backend.open();
    clock.now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const t = await s.create({ perSecond: 3 });
    const first = await Promise.all([1, 2, 3, 4, 5].map(() => s.charge(t.token, 'geolocation')));
    expect(first.map((o) => (o.ok ? 'ok' : o.reason))).toEqual([
      'ok',
      'ok',
      'ok',
      'RATELIMITED_SECOND',
      'RATELIMITED_SECOND',
    ]);
    expect(await s.balance(t.token, 'geolocation')).toBe(10_000 - 3);
    clock.now += 999;
    expect(await s.charge(t.token, 'geocoding')).toMatchObject({ ok: false, reason: 'RATELIMITED_SECOND' });
    clock.now += 1;
    expect(await s.charge(t.token, 'geocoding')).toMatchObject({ ok: true });
  });

  it('enforces the per-minute limit across seconds', async () => {
    const { s, clock } = await backend.open();
    clock.now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const t = await s.create({ perMinute: 4, perSecond: 10 });
    for (let i = 0; i < 4; i++) {
      expect((await s.charge(t.token, 'geolocation')).ok).toBe(true);
      clock.now += 10_000;
    }
    expect(await s.charge(t.token, 'geolocation')).toMatchObject({ ok: false, reason: 'RATELIMITED_MINUTE' });
    clock.now = Date.UTC(2026, 2, 1, 12, 1, 0, 0);
    expect((await s.charge(t.token, 'geolocation')).ok).toBe(true);
  });

  it('hit() limits a bucket per second without charging', async () => {
    const { s, clock } = await backend.open();
    const t = await s.create({});
    expect(await s.hit(t.token, 'balance', 1)).toBe(true);
    expect(await s.hit(t.token, 'balance', 1)).toBe(false);
    expect(await s.hit(t.token, 'other', 1)).toBe(true);
    clock.now += 1000;
    expect(await s.hit(t.token, 'balance', 1)).toBe(true);
    expect(await s.balance(t.token, 'geolocation')).toBe(10_000);
    expect(await s.hit('unknown', 'balance', 1)).toBe(true);
  });

  it('counts device slots per UTC day', async () => {
    const { s, clock } = await backend.open();
    const t = await s.create({ slots: 2 });
    const ch = (deviceId?: string) =>
      s.charge(t.token, 'geolocation', deviceId === undefined ? {} : { deviceId });
    expect(await ch('a1')).toEqual({ ok: true, balance: 9999, balanceSlots: 1 });
    expect(await ch('b2')).toEqual({ ok: true, balance: 9998, balanceSlots: 0 });
    expect(await ch('a1')).toEqual({ ok: true, balance: 9997, balanceSlots: 0 });
    expect(await ch('c3')).toEqual({ ok: false, reason: 'SLOTS', balance: 9997 });
    expect(await ch()).toEqual({ ok: true, balance: 9996, balanceSlots: 0 });
    clock.now += 86_400_000;
    expect(await ch('c3')).toEqual({ ok: true, balance: 9999, balanceSlots: 1 });
    // Tokens without a device plan report no slots.
    const plain = await s.create({});
    expect(await s.charge(plain.token, 'geolocation', { deviceId: 'a1' })).toEqual({
      ok: true,
      balance: 9999,
    });
  });

  it('admit() checks the balance and counts the call once in the windows; an admitted charge is not counted again', async () => {
    const { s, clock } = await backend.open();
    clock.now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const t = await s.create({ geolocationPerDay: 2, perSecond: 2 });
    expect(await s.admit(t.token, 'geolocation')).toEqual({ ok: true, balance: 2 });
    expect(await s.charge(t.token, 'geolocation', { admitted: true })).toEqual({ ok: true, balance: 1 });
    // One call so far in this second: a second admission fits, a third does not (and counts nothing).
    expect(await s.admit(t.token)).toEqual({ ok: true, balance: 0 });
    expect(await s.admit(t.token, 'geolocation')).toEqual({
      ok: false,
      reason: 'RATELIMITED_SECOND',
      balance: 1,
    });
    clock.now += 1000;
    expect(await s.charge(t.token, 'geolocation', { admitted: true })).toEqual({ ok: true, balance: 0 });
    expect(await s.admit(t.token, 'geolocation')).toEqual({
      ok: false,
      reason: 'RATELIMITED_DAY',
      balance: 0,
    });
    // The refused admission above counted nothing: two more calls fit in this second.
    expect(await s.admit(t.token)).toMatchObject({ ok: true });
    expect(await s.admit(t.token)).toMatchObject({ ok: true });
    expect(await s.admit('nope', 'geolocation')).toEqual({ ok: false, reason: 'INVALID_TOKEN', balance: 0 });
    await s.revoke(t.token);
    expect(await s.admit(t.token)).toMatchObject({ ok: false, reason: 'INACTIVE_TOKEN' });
  });

  it('keeps device ids and unknown tokens holding quotes, backslashes and other characters as given', async () => {
    const { s } = await backend.open();
    const t = await s.create({ slots: 2 });
    const odd = `a'b\\c"d\\'; DROP TABLE x; -- é\u{1F600}`;
    expect(await s.charge(t.token, 'geolocation', { deviceId: odd })).toMatchObject({
      ok: true,
      balanceSlots: 1,
    });
    expect(await s.charge(t.token, 'geolocation', { deviceId: odd })).toMatchObject({
      ok: true,
      balanceSlots: 1,
    });
    expect(await s.charge(t.token, 'geolocation', { deviceId: `${odd}x` })).toMatchObject({
      ok: true,
      balanceSlots: 0,
    });
    expect(await s.charge(`${t.token}'\\`, 'geolocation')).toEqual({
      ok: false,
      reason: 'INVALID_TOKEN',
      balance: 0,
    });
    expect(await s.hit(odd, odd, 1)).toBe(true);
    expect(await s.balance(t.token, 'geolocation')).toBe(10_000 - 3);
  });
});

describe.each(backends)('charge concurrency ($name)', (backend) => {
  it('2,000 concurrent charges against a balance of 1,000: exactly 1,000 succeed', async () => {
    const { s, used } = await backend.open();
    const t = await s.create({ geolocationPerDay: 1000 });
    const outcomes = await Promise.all(Array.from({ length: 2000 }, () => s.charge(t.token, 'geolocation')));
    const ok = outcomes.filter((o) => o.ok);
    expect(ok).toHaveLength(1000);
    expect(new Set(ok.map((o) => o.balance)).size).toBe(1000);
    expect(outcomes.filter((o) => !o.ok && o.reason === 'RATELIMITED_DAY')).toHaveLength(1000);
    expect(await s.balance(t.token, 'geolocation')).toBe(0);
    expect(await used(t.token)).toBe(1000);
  });
});

describe('charge durability and concurrency (SQLite)', () => {
  it('waits for a write lock held elsewhere, and rejects (charging nothing) when it is held too long', async () => {
    const dir = tempDir('wb-tokens-');
    const s = TokenStore.open(dir, { lockWaitMs: 300 });
    open.push(s);
    const t = s.create({ geolocationPerDay: 10 });
    const other = new Database(join(dir, 'tokens.sqlite'));
    try {
      other.exec('BEGIN IMMEDIATE');
      const waiting = s.charge(t.token, 'geolocation');
      setTimeout(() => other.exec('COMMIT'), 50);
      expect(await waiting).toEqual({ ok: true, balance: 9 });

      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      await expect(s.charge(t.token, 'geolocation')).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      other.exec('COMMIT');
      expect(s.balance(t.token, 'geolocation')).toBe(9);
      expect(await s.charge(t.token, 'geolocation')).toEqual({ ok: true, balance: 8 });
    } finally {
      other.close();
    }
  });

  describe('across processes', () => {
    let script: string;
    beforeAll(() => {
      script = join(tempDir('wb-tokens-'), 'charger.mts');
      writeFileSync(script, CHILD);
    });

    it('two processes charging one token concurrently: total ok equals the balance', async () => {
      const { s, dir } = store();
      const t = s.create({ geolocationPerDay: 1500 });
      s.close();
      const runs = [0, 1].map(() => runChild(script, ['race', dir, t.token, '1200']));
      const results = await Promise.all(runs.map((r) => r.done));
      const oks = results.map((r) => (r as { ok: number }).ok);
      expect(oks[0]).toBeGreaterThan(0);
      expect(oks[1]).toBeGreaterThan(0);
      expect((oks[0] ?? 0) + (oks[1] ?? 0)).toBe(1500);
      expect(usedInFile(dir, t.token)).toBe(1500);
    });

    it('a charge reported before SIGKILL is never lost, and none is invented', async () => {
      const { s, dir } = store();
      const t = s.create({ geolocationPerDay: 1_000_000 });
      s.close();
      const log = join(dir, 'charges.log');
      const child = runChild(script, ['kill', dir, t.token, log]);
      let reported = 0;
      child.proc.on('message', () => {
        reported++;
        if (reported === 300) child.proc.kill('SIGKILL');
      });
      const exit = await child.exited;
      expect(exit.signal).toBe('SIGKILL');
      const lines = readFileSync(log, 'utf8');
      const submitted = lines.split('S').length - 1;
      const resolved = lines.split('R').length - 1;
      const used = usedInFile(dir, t.token);
      expect(reported).toBeGreaterThanOrEqual(300);
      expect(resolved).toBeGreaterThanOrEqual(reported);
      expect(used).toBeGreaterThanOrEqual(resolved);
      expect(used).toBeLessThanOrEqual(submitted);
      expect(submitted - resolved).toBeLessThanOrEqual(32);
    });
  });
});

/**
 * The child process (modes with -pg take a PostgreSQL URL for DIR): `race DIR TOKEN N` charges N times (in waves of concurrent calls, so two
 * processes interleave) and sends {ok}; `kill DIR TOKEN LOG` charges forever with 32 calls in
 * flight, appending "S" to LOG before each call and "R" after each charge resolves (written
 * synchronously, so they survive SIGKILL) and sending a message per resolved charge.
 */
const CHILD = `
import { appendFileSync } from 'node:fs';
import { PgTokenStore, TokenStore } from ${JSON.stringify(tokensModule)};
const [mode, dir, token, arg] = process.argv.slice(2);
// A mode ending in -pg takes a PostgreSQL URL where the others take a directory.
const store = mode.endsWith('-pg') ? await PgTokenStore.open(dir) : TokenStore.open(dir);
if (mode.startsWith('race')) {
  let ok = 0;
  const n = Number(arg);
  for (let i = 0; i < n; i += 50) {
    const wave = await Promise.all(Array.from({ length: 50 }, () => store.charge(token, 'geolocation')));
    ok += wave.filter((o) => o.ok).length;
  }
  await store.close();
  process.send({ ok }, () => process.exit(0));
} else {
  const one = async () => {
    for (;;) {
      appendFileSync(arg, 'S');
      const o = await store.charge(token, 'geolocation');
      if (!o.ok) throw new Error(o.reason);
      appendFileSync(arg, 'R');
      process.send({ charged: 1 });
    }
  };
  for (let i = 0; i < 32; i++) void one();
}
`;

function runChild(script: string, args: string[]) {
  const proc: ChildProcess = fork(script, args, {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal })),
  );
  const done = new Promise<unknown>((resolve, reject) => {
    proc.once('message', resolve);
    proc.once('close', (code) => reject(new Error(`child exited (${code}) without a result`)));
  });
  done.catch(() => {});
  return { proc, exited, done };
}

describe('PostgreSQL: several servers on one database', () => {
  /** `n` stores on one new database (as `n` servers would be); `clock` is the time they all see. */
  async function servers(n: number, clock?: { now: number }) {
    const url = await freshDatabase();
    const list: PgTokenStore[] = [];
    for (let i = 0; i < n; i++) {
      const s = await PgTokenStore.open(url, clock ? { now: () => clock.now } : {});
      storages.push(s);
      list.push(s);
    }
    return { url, list };
  }

  it('many concurrent charges from two stores never overspend: the balance left equals the successful charges', async () => {
    const { url, list } = await servers(2);
    const [a, b] = list as [PgTokenStore, PgTokenStore];
    // Each store asks for 1,800 units and both together for 3,600: the balance of 2,500 runs out
    // under the two, and neither alone can take it all (so both must have succeeded somewhat,
    // however the batches interleave on a loaded machine).
    const t = await a.create({ geolocationPerDay: 2500 });
    const fire = (s: PgTokenStore) =>
      Promise.all(
        Array.from({ length: 1200 }, (_, i) => s.charge(t.token, 'geolocation', { units: 1 + (i % 2) })),
      );
    const [fromA, fromB] = await Promise.all([fire(a), fire(b)]);
    const all = [...fromA, ...fromB];
    const okUnits = all.reduce((n, o, i) => n + (o.ok ? 1 + ((i % 1200) % 2) : 0), 0);
    expect(fromA.some((o) => o.ok)).toBe(true);
    expect(fromB.some((o) => o.ok)).toBe(true);
    expect(all.every((o) => o.ok || o.reason === 'RATELIMITED_DAY')).toBe(true);
    // Nothing overspent, nothing lost: the stored usage is exactly the sum of the successes.
    expect(okUnits).toBeLessThanOrEqual(2500);
    expect(okUnits).toBeGreaterThanOrEqual(2499);
    expect(await usedInPg(url, t.token)).toBe(okUnits);
    expect(await b.balance(t.token, 'geolocation')).toBe(2500 - okUnits);
  });

  it('shares per-second and per-minute limits, balance-endpoint hits and device slots', async () => {
    const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0, 0) };
    const { list } = await servers(2, clock);
    const [a, b] = list as [PgTokenStore, PgTokenStore];
    const t = await a.create({ perSecond: 4, perMinute: 6, slots: 1 });
    const second = await Promise.all([a, b, a, b, a, b].map((s) => s.charge(t.token, 'geolocation')));
    expect(second.filter((o) => o.ok)).toHaveLength(4);
    clock.now += 1000;
    const minute = await Promise.all([a, b, a, b].map((s) => s.admit(t.token, 'geolocation')));
    expect(minute.map((o) => (o.ok ? 'ok' : o.reason)).sort()).toEqual([
      'RATELIMITED_MINUTE',
      'RATELIMITED_MINUTE',
      'ok',
      'ok',
    ]);
    expect(await a.hit(t.token, 'balance', 1)).toBe(true);
    expect(await b.hit(t.token, 'balance', 1)).toBe(false);
    clock.now += 60_000;
    expect(await a.charge(t.token, 'geolocation', { deviceId: 'one' })).toMatchObject({
      ok: true,
      balanceSlots: 0,
    });
    expect(await b.charge(t.token, 'geolocation', { deviceId: 'two' })).toMatchObject({
      ok: false,
      reason: 'SLOTS',
    });
    expect(await b.charge(t.token, 'geolocation', { deviceId: 'one' })).toMatchObject({ ok: true });
  });

  it('refuses alone what PostgreSQL cannot store (NUL): such a token is unknown, such a device id rejects', async () => {
    const { list } = await servers(1);
    const [a] = list as [PgTokenStore];
    const t = await a.create({ slots: 1 });
    const [bad, unknown, good] = await Promise.allSettled([
      a.charge(t.token, 'geolocation', { deviceId: 'a\0b' }),
      a.charge(`${t.token}\0`, 'geolocation'),
      a.charge(t.token, 'geolocation', { deviceId: 'a' }),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: expect.any(RangeError) });
    expect(unknown).toEqual({
      status: 'fulfilled',
      value: { ok: false, reason: 'INVALID_TOKEN', balance: 0 },
    });
    expect(good).toEqual({ status: 'fulfilled', value: { ok: true, balance: 9999, balanceSlots: 0 } });
  });

  it('admissions of tokens without rate limits read the shared balance; limits set behind the copy still hold', async () => {
    const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0, 0) };
    const { url, list } = await servers(2, clock);
    const [a, b] = list as [PgTokenStore, PgTokenStore];
    const t = await a.create({ geolocationPerDay: 3 });
    await vi.waitFor(() => expect(b.get(t.token)).toBeDefined(), { timeout: 3000, interval: 20 });
    expect(await b.charge(t.token, 'geolocation', { units: 2 })).toMatchObject({ ok: true, balance: 1 });
    expect(await a.admit(t.token, 'geolocation')).toEqual({ ok: true, balance: 1 });
    expect(await a.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 0 });
    expect(await b.admit(t.token, 'geolocation')).toEqual({
      ok: false,
      reason: 'RATELIMITED_DAY',
      balance: 0,
    });
    // A limit written without a notification: the stores' copies still show none.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('UPDATE tokens SET per_second = 1, geolocation_per_day = 10 WHERE token = $1', [
        t.token,
      ]);
    } finally {
      await client.end();
    }
    expect(a.get(t.token)?.perSecond).toBeUndefined();
    const admitted = await Promise.all([a, b, a].map((s) => s.admit(t.token, 'geolocation')));
    expect(admitted.map((o) => (o.ok ? 'ok' : o.reason)).sort()).toEqual([
      'RATELIMITED_SECOND',
      'RATELIMITED_SECOND',
      'ok',
    ]);
  });

  it('a token created, changed or revoked on one server reaches the others within seconds', async () => {
    const { list } = await servers(2);
    const [a, b] = list as [PgTokenStore, PgTokenStore];
    const t = await a.create({ label: 'x' });
    await vi.waitFor(() => expect(b.get(t.token)?.label).toBe('x'), { timeout: 3000, interval: 20 });
    await a.update(t.token, { label: 'y' });
    await vi.waitFor(() => expect(b.get(t.token)?.label).toBe('y'), { timeout: 3000, interval: 20 });
    await b.revoke(t.token);
    await vi.waitFor(() => expect(a.get(t.token)?.active).toBe(false), { timeout: 3000, interval: 20 });
    // Charges never trust the copy: a revocation counts at once.
    await a.update(t.token, { label: 'z' });
    expect(await b.charge(t.token, 'geolocation')).toMatchObject({ ok: false, reason: 'INACTIVE_TOKEN' });
  });

  it('migrates once when several servers start together, and refuses a schema newer than it knows', async () => {
    const url = await freshDatabase();
    const opened = await Promise.all(Array.from({ length: 5 }, () => PgTokenStore.open(url)));
    storages.push(...opened);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const r = await client.query("SELECT version FROM whereabouts_schema WHERE component = 'tokens'");
      expect(r.rows).toEqual([{ version: PG_TOKENS_SCHEMA_VERSION }]);
      await client.query("UPDATE whereabouts_schema SET version = version + 1 WHERE component = 'tokens'");
    } finally {
      await client.end();
    }
    await expect(PgTokenStore.open(url)).rejects.toThrow(
      new RegExp(
        `schema version ${PG_TOKENS_SCHEMA_VERSION + 1}, newer than this build of whereabouts knows`,
      ),
    );
  });

  it('fails fast when PostgreSQL cannot be reached', async () => {
    const started = Date.now();
    await expect(
      PgTokenStore.open('postgres://whereabouts@127.0.0.1:1/none', { connectTimeoutMs: 1000 }),
    ).rejects.toThrow(/ECONNREFUSED|connect/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  describe('across processes', () => {
    let script: string;
    beforeAll(() => {
      script = join(tempDir('wb-tokens-'), 'charger.mts');
      writeFileSync(script, CHILD);
    });

    it('two processes charging one token concurrently: total ok equals the balance', async () => {
      const url = await freshDatabase();
      const s = await PgTokenStore.open(url);
      const t = await s.create({ geolocationPerDay: 1500 });
      await s.close();
      const runs = [0, 1].map(() => runChild(script, ['race-pg', url, t.token, '1200']));
      const results = await Promise.all(runs.map((r) => r.done));
      const oks = results.map((r) => (r as { ok: number }).ok);
      expect(oks[0]).toBeGreaterThan(0);
      expect(oks[1]).toBeGreaterThan(0);
      expect((oks[0] ?? 0) + (oks[1] ?? 0)).toBe(1500);
      expect(await usedInPg(url, t.token)).toBe(1500);
    });

    it('a charge reported before SIGKILL is never lost, and none is invented', async () => {
      const url = await freshDatabase();
      const s = await PgTokenStore.open(url);
      const t = await s.create({ geolocationPerDay: 1_000_000 });
      await s.close();
      const log = join(tempDir('wb-tokens-'), 'charges.log');
      const child = runChild(script, ['kill-pg', url, t.token, log]);
      let reported = 0;
      child.proc.on('message', () => {
        reported++;
        if (reported === 300) child.proc.kill('SIGKILL');
      });
      const exit = await child.exited;
      expect(exit.signal).toBe('SIGKILL');
      const lines = readFileSync(log, 'utf8');
      const submitted = lines.split('S').length - 1;
      const resolved = lines.split('R').length - 1;
      // A transaction whose COMMIT was sent before the kill may still commit: wait for it.
      await new Promise((r) => setTimeout(r, 200));
      const used = await usedInPg(url, t.token);
      expect(reported).toBeGreaterThanOrEqual(300);
      expect(resolved).toBeGreaterThanOrEqual(reported);
      expect(used).toBeGreaterThanOrEqual(resolved);
      expect(used).toBeLessThanOrEqual(submitted);
      expect(submitted - resolved).toBeLessThanOrEqual(32);
    });
  });
});

describe('token generation', () => {
  it('never starts a token with "-", which a command line would read as an option', () => {
    // Without the guard about one token in 64 would: 2,000 draws miss it with odds 1e-14.
    for (let i = 0; i < 2000; i++) {
      const t = newToken();
      expect(t).toHaveLength(43);
      expect(t.startsWith('-')).toBe(false);
    }
  });
});

describe('whereabouts token (CLI)', () => {
  let runner: string;
  beforeAll(() => {
    runner = join(tempDir('wb-tokens-'), 'cli.mts');
    writeFileSync(
      runner,
      `import { main } from ${JSON.stringify(join(root, 'src', 'cli', 'main.ts'))};\nprocess.exitCode = await main(process.argv.slice(2));\n`,
    );
  });
  const cli = (args: string[]) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', runner, 'token', ...args], {
      cwd: root,
      encoding: 'utf8',
    });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  };
  const inProcess = async (argv: string[]) => {
    const { main } = await import('../src/cli/main.js');
    let stderr = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr += String(chunk);
      return true;
    });
    try {
      return { code: await main(argv), stderr };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  };

  it('creates, updates, revokes and lists, showing the token in full only on create', () => {
    const dir = tempDir('wb-tokens-');
    const created = cli([
      'create',
      '--db',
      dir,
      '--label',
      'shop',
      '--geolocation',
      '100',
      '--per-second',
      '2',
      '--scope',
      'geocoding:reverse',
      '--referrer',
      '*shop.example*',
      '--ip',
      '2001:db8::/32',
      '--service',
      'maps',
      '--slots',
      '3',
      '--gps',
    ]);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const rec = JSON.parse(created.stdout) as Record<string, unknown> & { token: string };
    expect(rec).toMatchObject({
      label: 'shop',
      geolocationPerDay: 100,
      geocodingPerDay: 5000,
      perSecond: 2,
      scopes: ['geocoding:reverse'],
      referrers: ['*shop.example*'],
      ips: ['2001:db8::/32'],
      services: ['maps'],
      slots: 3,
      gps: true,
      active: true,
    });
    expect(rec.token).toHaveLength(43);

    const updated = cli([
      'update',
      rec.token,
      '--db',
      dir,
      '--referrer',
      'https://b.example/',
      '--ip',
      '10.0.0.0/8',
      '--remove-ip',
      '2001:db8::/32',
      '--no-gps',
      '--no-per-second',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.stdout).not.toContain(rec.token);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      token: `${rec.token.slice(0, 4)}…`,
      referrers: ['*shop.example*', 'https://b.example/'],
      ips: ['10.0.0.0/8'],
      gps: false,
    });
    expect(JSON.parse(updated.stdout).perSecond).toBeUndefined();

    const revoked = cli(['revoke', rec.token, '--db', dir]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).active).toBe(false);

    const listed = cli(['list', '--db', dir]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(rec.token);
    const all = JSON.parse(listed.stdout) as { token: string; active: boolean }[];
    expect(all).toHaveLength(1);
    expect(all[0]?.token).toBe(`${rec.token.slice(0, 4)}…`);
  });

  it('refuses bad settings with exit 2 and unknown tokens with exit 1, clearly', async () => {
    const dir = tempDir('wb-tokens-');
    const referrers = Array.from({ length: 11 }, (_, i) => ['--referrer', `https://s${i}.example/`]).flat();
    const cases: [string[], number, RegExp][] = [
      [['create', '--db', dir, ...referrers], 2, /11 referrer patterns; a token may have at most 10/],
      [
        [
          'create',
          '--db',
          dir,
          ...['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4', '5.5.5.5', '6.6.6.6'].flatMap((ip) => ['--ip', ip]),
        ],
        2,
        /6 IP entries; a token may have at most 5/,
      ],
      [['create', '--db', dir, '--ip', '10.1.2.0/40'], 2, /prefix length over 32/],
      [['create', '--db', dir, '--scope', 'geocoding:all'], 2, /unknown scope "geocoding:all"/],
      [['create', '--db', dir, '--service', 'tiles'], 2, /unknown service "tiles"/],
      [['create', '--db', dir, '--geolocation', 'lots'], 2, /--geolocation needs a whole number/],
      [['create', '--db', dir, '--gps', '--no-gps'], 2, /contradict/],
      [['create'], 2, /needs --db DIR/],
      [['frobnicate', '--db', dir], 2, /unknown token command/],
      [['revoke', 'NoSuchTokenValue', '--db', dir], 1, /no token NoSu…/],
      [['update', 'NoSuchTokenValue', '--db', dir, '--gps'], 1, /no token NoSu…/],
    ];
    // In process (through the same main() as the binary): spawning one process per case
    // would spend most of the test loading TypeScript.
    for (const [args, code, message] of cases) {
      const r = await inProcess(['token', ...args]);
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toContain('NoSuchTokenValue');
    }
    // And one through a real process, for the exit code as the shell sees it.
    const real = cli(['revoke', 'NoSuchTokenValue', '--db', dir]);
    expect(real.code).toBe(1);
    expect(real.stderr).toMatch(/no token NoSu…/);
    expect(JSON.parse(cli(['list', '--db', dir]).stdout)).toEqual([]);
  });
});
