/**
 * The PostgreSQL token store when the connection is lost around COMMIT: a TCP relay between the
 * store and the database cuts the connection exactly when the client's COMMIT passes, either
 * after handing it on (the transaction commits, the answer is lost) or instead of handing it on
 * (nothing commits). The store must answer the first as charged and the second as unavailable:
 * never a charge it did not report, never a reported charge that is not stored.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { PgTokenStore, StoreUnavailableError } from '../src/tokens/index.js';
import { freshDatabase } from './pg.js';

/** `COMMIT` as the simple-query message the driver sends: 'Q', length, text, NUL. */
const COMMIT = Buffer.from('COMMIT\0');

interface Relay {
  url: string;
  /** Cuts the next connection that sends COMMIT: after forwarding it, or instead of it. */
  cutNextCommit(mode: 'after' | 'before'): void;
  /** While on, new connections are closed at once, as by a database that is down. */
  refuse(on: boolean): void;
  /** How many COMMITs were cut. */
  cut(): number;
  close(): Promise<void>;
}

async function relay(target: string): Promise<Relay> {
  const to = new URL(target);
  let pending: 'after' | 'before' | undefined;
  let cut = 0;
  let refusing = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection(Number(to.port), to.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (pending !== undefined && chunk.includes(COMMIT)) {
        const mode = pending;
        pending = undefined;
        cut++;
        if (mode === 'after') upstream.write(chunk);
        // The client's side goes at once: the answer to COMMIT can never reach it.
        client.destroy();
        // The database's side closes once what was handed on is written.
        upstream.end();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!client.destroyed) client.write(chunk);
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', () => upstream.end());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cutNextCommit: (mode) => {
      pending = mode;
    },
    cut: () => cut,
    refuse: (on) => {
      refusing = on;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/**
 * A fresh database with a token of 10 requests a day, reached directly and by a store whose
 * connection passes through a relay that can cut a COMMIT.
 */
async function throughRelay() {
  const database = await freshDatabase();
  const direct = await PgTokenStore.open(database);
  open.push(direct);
  const t = await direct.create({ geolocationPerDay: 10 });
  const r = await relay(database);
  open.push(r);
  const store = await PgTokenStore.open(r.url, { resolveMs: 5000 });
  open.push(store);
  return { direct, t, r, store };
}

it('a COMMIT that reached the database but whose answer was lost: the charge is reported, and stored once', async () => {
  const { direct, t, r, store } = await throughRelay();
  r.cutNextCommit('after');
  expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 9 });
  expect(r.cut()).toBe(1);
  expect(await direct.balance(t.token, 'geolocation')).toBe(9);
  // The store goes on as before.
  expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 8 });
  expect(await direct.balance(t.token, 'geolocation')).toBe(8);
});

it('a COMMIT lost before it reached the database: the charge is refused as unavailable, and nothing is stored', async () => {
  const { direct, t, r, store } = await throughRelay();
  r.cutNextCommit('before');
  const started = Date.now();
  await expect(store.charge(t.token, 'geolocation')).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(r.cut()).toBe(1);
  expect(await direct.balance(t.token, 'geolocation')).toBe(10);
  expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 9 });
});

it('while the database is asked how a lost COMMIT ended, the charges behind it are refused at once, not held', async () => {
  const { direct, t, r, store } = await throughRelay();
  r.refuse(true);
  r.cutNextCommit('after');
  // The relay refuses new connections already: the first charge needs the one the store opened.
  const first = store.charge(t.token, 'geolocation');
  await expect.poll(() => r.cut(), { timeout: 5000, interval: 20 }).toBe(1);
  // The store now asks the database, out of reach, whether the first batch committed.
  const started = Date.now();
  await expect(store.charge(t.token, 'geolocation')).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(Date.now() - started).toBeLessThan(1000);
  r.refuse(false);
  expect(await first).toMatchObject({ ok: true, balance: 9 });
  expect(await direct.balance(t.token, 'geolocation')).toBe(9);
  expect(await store.charge(t.token, 'geolocation')).toMatchObject({ ok: true, balance: 8 });
});
