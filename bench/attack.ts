/**
 * Attack probes against `whereabouts serve` on 127.0.0.1 (docs/security.md): each probe says
 * whether the defence held, and the latency of normal requests is measured quietly, under a
 * slow-body flood and under a flood of deeply nested bodies, in the same run.
 *
 *   npx tsx bench/attack.ts [--seconds S] [--slow-sockets N] [--nested-connections N] [--request-timeout MS]
 *
 * Bounded: every phase lasts `--seconds` (default 5, at most 60), at most 1000 slow sockets,
 * 32 nested-body connections; loopback only. The server runs as one process (`--workers 0`)
 * so that its memory can be read from /proc. Exit code 1 when a probe failed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseRequest, parseRequestText } from '../src/locating/request/index.js';
import { TokenStore } from '../src/tokens/index.js';
import { root, startServe } from './load.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    'slow-sockets': { type: 'string', default: '300' },
    'nested-connections': { type: 'string', default: '8' },
    'request-timeout': { type: 'string', default: '3000' },
    // the flood child's own flags
    flood: { type: 'string' },
    port: { type: 'string' },
    count: { type: 'string' },
  },
});
const phaseMs = Math.min(60, Math.max(1, Number(values.seconds))) * 1000;
const slowSockets = Math.min(1000, Math.max(1, Number(values['slow-sockets'])));
const nestedConnections = Math.min(32, Math.max(1, Number(values['nested-connections'])));
const requestTimeoutMs = Math.min(60_000, Math.max(500, Number(values['request-timeout'])));

/** The largest nested body under the body limit: `{"x":[[[[...]]]]}` with an optional token. */
function nestedBody(withToken: string | undefined, size = 500 * 1024): string {
  const head = withToken === undefined ? '{"x":' : `{"token":"${withToken}","x":`;
  const depth = Math.floor((size - head.length - 1) / 2);
  return `${head}${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

async function main(): Promise<void> {
  const store = mkdtempSync(join(tmpdir(), 'wb-attack-'));
  const seed = TokenStore.open(store);
  const token = seed.create({
    label: 'normal',
    geolocationPerDay: 10_000_000,
    geocodingPerDay: 1_000_000,
  }).token;
  const restricted = seed.create({ label: 'restricted', ips: ['10.0.0.0/8'] }).token;
  const gpsToken = seed.create({ label: 'gps', gps: true }).token;
  seed.close();

  const logLines: string[] = [];
  const served = await startServe(
    [
      '--db',
      join(root, 'data', 'demo-db'),
      '--store',
      store,
      '--workers',
      '0',
      '--trust-proxy',
      '127.0.0.1',
      '--request-timeout',
      String(requestTimeoutMs),
      '--log-level',
      'info',
    ],
    { onLine: (line) => logLines.push(line) },
  );
  const { url, port } = served;
  const serverPid = served.child.pid as number;
  // The server runs in its own process group: stop it whatever happens to this process.
  process.on('exit', () => {
    try {
      process.kill(-serverPid, 'SIGKILL');
    } catch {}
  });
  process.on('SIGINT', () => process.exit(130));

  const results: { probe: string; held: boolean; detail: string }[] = [];
  const probe = (name: string, held: boolean, detail: string) => {
    results.push({ probe: name, held, detail });
    process.stdout.write(`${held ? 'held  ' : 'FAILED'}  ${name}: ${detail}\n`);
  };

  const normalBody = readFileSync(join(root, 'data', 'demo-requests.jsonl'), 'utf8')
    .split('\n')
    .flatMap((l) => {
      // The demo file also holds invalid requests (a leading zero): only valid JSON is normal.
      try {
        return [JSON.stringify({ ...(JSON.parse(l) as object), token, address: 0 })];
      } catch {
        return [];
      }
    })
    .slice(0, 50);

  /** The costliest body the shape check lets through: 24,990 empty arrays (an array and a comma each count), then a string to 500 KB. */
  function widestAllowedBody(withToken: string | undefined, size = 500 * 1024): string {
    const head = withToken === undefined ? '{"x":[' : `{"token":"${withToken}","x":[`;
    const arrays = Array(24_990).fill('[]').join(',');
    const pad = size - head.length - arrays.length - 12;
    return `${head}${arrays}],"p":"${'x'.repeat(Math.max(0, pad))}"}`;
  }

  function rssBytes(): number {
    const status = readFileSync(`/proc/${serverPid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    return Number(kb ?? 0) * 1024;
  }

  /** CPU time (user + system) the server process has used, in ms (/proc: clock ticks of 10 ms). */
  function serverCpuMs(): number {
    const fields = readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  }

  const percentile = (sorted: number[], p: number) =>
    sorted.length === 0
      ? Number.NaN
      : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number);

  /** Normal located requests, 2 at a time, for `ms`: p50/p99 latency in ms and the count. */
  async function normalLatency(ms: number): Promise<{ n: number; p50: number; p99: number; errors: number }> {
    const until = Date.now() + ms;
    const times: number[] = [];
    let errors = 0;
    let i = 0;
    const loop = async () => {
      while (Date.now() < until) {
        const body = normalBody[i++ % normalBody.length] as string;
        const t = performance.now();
        try {
          const res = await fetch(`${url}/v2/process`, { method: 'POST', body });
          await res.text();
          if (res.status !== 200) errors++;
        } catch {
          errors++;
        }
        times.push(performance.now() - t);
      }
    };
    await Promise.all([loop(), loop()]);
    times.sort((a, b) => a - b);
    const round = (x: number) => Math.round(x * 10) / 10;
    return {
      n: times.length,
      p50: round(percentile(times, 0.5)),
      p99: round(percentile(times, 0.99)),
      errors,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Probes of single requests.

  {
    const status = async (xff: string) =>
      (await fetch(`${url}/v2/balance?token=${restricted}`, { headers: { 'x-forwarded-for': xff } })).status;
    const spoofed = await status('10.1.2.3, 8.8.8.8');
    probe('spoofed X-Forwarded-For (client at 8.8.8.8 writes 10.1.2.3)', spoofed === 403, `HTTP ${spoofed}`);
    await new Promise((r) => setTimeout(r, 1100));
    const marker = logLines.length;
    const garbage = await status('notanip');
    await new Promise((r) => setTimeout(r, 200));
    const logged = logLines.slice(marker).some((l) => l.includes('"ip":"notanip"'));
    probe(
      'malformed X-Forwarded-For (notanip)',
      garbage === 403 && !logged,
      `HTTP ${garbage}; logged as the caller: ${logged}`,
    );
  }

  {
    const variants = [
      `/v2/balance?%74oken=${token}`,
      `/v2/balance?Token=${token}`,
      `/v2/search?q=${token}`,
      `/v2/balance/${encodeURIComponent(token)}`,
      `/v2/balance?token=${[...token].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}`,
    ];
    for (const path of variants) await fetch(`${url}${path}`).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 300));
    const lower = token.toLowerCase();
    const leaked = logLines.filter((l) => {
      let decoded = l;
      try {
        decoded = decodeURIComponent(l);
      } catch {}
      return l.toLowerCase().includes(lower) || decoded.toLowerCase().includes(lower);
    }).length;
    probe(
      'token in the log (%74oken=, Token=, q=, path, every character encoded)',
      leaked === 0,
      `${leaked} log lines hold it`,
    );
  }

  {
    const junk = `${'x'.repeat(10_000)}"}`;
    const res = await fetch(`${url}/health`, { headers: { 'x-request-id': junk } });
    const echoed = res.headers.get('x-request-id') ?? '';
    probe('10 KB X-Request-Id', echoed.length <= 40, `echoed ${echoed.length} characters`);
    const health = await res.json();
    probe('/health detail to anyone', JSON.stringify(health) === '{"status":"ok"}', JSON.stringify(health));
  }

  {
    const send = (gps: unknown) =>
      fetch(`${url}/v2/process`, {
        method: 'POST',
        body: JSON.stringify({ ...JSON.parse(normalBody[0] as string), token: gpsToken, gps: [gps] }),
      }).then((r) => r.json() as Promise<{ status: string; message?: string }>);
    const asString = await send({ lat: '52.5', lon: 13.4 });
    const longSource = await send({ lat: 52.5, lon: 13.4, source: 'x'.repeat(100 * 1024) });
    probe(
      'GPS lat as a string, 100 KB source',
      asString.message === 'Invalid request' && longSource.message === 'Invalid request',
      `${asString.message ?? asString.status}; ${longSource.message ?? longSource.status}`,
    );
  }

  {
    // One slow body on its own: closed with 408 within the deadline (Node checks every second).
    const s = await open(port);
    const start = Date.now();
    let received = '';
    s.on('data', (d) => {
      received += d.toString('latin1');
    });
    const closedAt = new Promise<number>((resolve) => s.on('close', () => resolve(Date.now() - start)));
    s.write(`POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{`);
    const timer = setInterval(() => s.writable && s.write(' '), 1000);
    const ms = await Promise.race([
      closedAt,
      new Promise<number>((r) => setTimeout(() => r(-1), requestTimeoutMs + 5000)),
    ]);
    clearInterval(timer);
    s.destroy();
    probe(
      `slow body, 1 byte/s (request timeout ${requestTimeoutMs} ms)`,
      ms >= 0 && ms <= requestTimeoutMs + 1500,
      ms < 0 ? 'still open' : `closed after ${ms} ms with ${received.split('\r\n')[0]}`,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Cost of the worst body, before and after the shape limits, in this process.

  {
    const timeOf = (f: () => void, runs = 10) => {
      f();
      const t = performance.now();
      for (let i = 0; i < runs; i++) f();
      return Math.round(((performance.now() - t) / runs) * 100) / 100;
    };
    for (const [label, body] of [
      ['nested, no token', nestedBody(undefined)],
      ['nested, valid token', nestedBody(token)],
      ['widest allowed, no token', widestAllowedBody(undefined)],
      ['widest allowed, valid token', widestAllowedBody(token)],
    ] as const) {
      // What /process did before: JSON.parse and validation, then tokenOfText's second JSON.parse.
      const before = timeOf(() => {
        const v: unknown = JSON.parse(body);
        parseRequest(v, { requireToken: true });
        JSON.parse(body);
      });
      // What it does now: the shape check refuses it; the token is read from the text.
      const after = timeOf(() => {
        parseRequestText(body, { requireToken: true });
        /"token"\s*:\s*"([^"\\]{1,256})"/.exec(body);
      });
      process.stdout.write(
        `cost of a 500 KB body, ${label}: before ${before} ms, after ${after} ms (in process)\n`,
      );
    }
    for (const [label, body] of [
      ['nested, no token', nestedBody(undefined)],
      ['nested, valid token', nestedBody(token)],
      ['widest allowed, no token', widestAllowedBody(undefined)],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t = performance.now();
        await fetch(`${url}/v2/process`, { method: 'POST', body }).then((r) => r.text());
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      process.stdout.write(
        `round trip of a 500 KB body, ${label}: median ${Math.round((times[5] as number) * 10) / 10} ms (client, server and loopback)\n`,
      );
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Floods: normal-request latency quiet, under slow bodies, under nested bodies.

  const rows: { phase: string; n: number; p50: number; p99: number; errors: number; note: string }[] = [];
  /** A quiet phase: normal requests alone. */
  async function quietPhase(phase: string): Promise<void> {
    const rss = rssBytes();
    const cpu = serverCpuMs();
    const quiet = await normalLatency(phaseMs);
    rows.push({
      phase,
      ...quiet,
      note: `server RSS ${Math.round(rss / 1e6)} MB; server CPU ${Math.round((serverCpuMs() - cpu) / (phaseMs / 1000))} ms/s`,
    });
  }

  await normalLatency(2000);
  await quietPhase('quiet (before the floods)');

  {
    // Sockets that each announce a 512,000-byte body and send 1 KB a second, from another process.
    const flood = startFlood('slow', slowSockets, port);
    await flood.ready;
    let peak = rssBytes();
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes());
    }, 250);
    // Long enough for the server to cut the first round of slow sockets.
    const normal = await normalLatency(Math.max(phaseMs, requestTimeoutMs + 2000));
    clearInterval(sampler);
    const { closedByServer = 0, longest = 0 } = await flood.stop();
    rows.push({
      phase: `slow-body flood (${slowSockets} sockets)`,
      ...normal,
      note: `server cut ${closedByServer} slow sockets, the longest after ${longest} ms; server RSS peak ${Math.round(peak / 1e6)} MB`,
    });
    probe(
      `slow-body flood: ${slowSockets} sockets at 1 KB/s`,
      // Node looks for expired requests every second (here every 750 ms): the deadline plus
      // that, plus scheduling on a machine this flood keeps busy.
      closedByServer > 0 && longest <= requestTimeoutMs + 2500,
      `cut ${closedByServer}, longest ${longest} ms`,
    );
  }

  {
    const flood = startFlood('nested', nestedConnections, port);
    await flood.ready;
    const cpu = serverCpuMs();
    const normal = await normalLatency(phaseMs);
    const cpuMs = serverCpuMs() - cpu;
    const { sent = 0, ms = 1 } = await flood.stop();
    const perSecond = sent / (ms / 1000);
    rows.push({
      phase: `nested-body flood (${nestedConnections} connections)`,
      ...normal,
      note: `${Math.round(perSecond)} nested 500 KB bodies/s answered; server CPU ${Math.round(cpuMs / (phaseMs / 1000))} ms/s`,
    });
  }

  await quietPhase('quiet (after the floods)');

  process.stdout.write('\nnormal /v2/process requests (2 at a time), same run:\n');
  for (const r of rows) {
    process.stdout.write(
      `  ${r.phase.padEnd(38)} n=${String(r.n).padStart(6)}  p50 ${String(r.p50).padStart(6)} ms  p99 ${String(r.p99).padStart(7)} ms  errors ${r.errors}  (${r.note})\n`,
    );
  }

  served.child.kill('SIGTERM');
  await served.exited;
  rmSync(store, { recursive: true, force: true });
  const failed = results.filter((r) => !r.held).length;
  process.stdout.write(`\n${results.length - failed} held, ${failed} failed\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

/** A flood run by a child process (this file with `--flood`), so that it does not slow this client. */
function startFlood(
  kind: 'slow' | 'nested',
  count: number,
  port: number,
): { ready: Promise<void>; stop(): Promise<Record<string, number>> } {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      '--flood',
      kind,
      '--port',
      String(port),
      '--count',
      String(count),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout?.on('data', (d) => {
    out += String(d);
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const ready = new Promise<void>((resolve) => {
    const check = () => (out.includes('ready\n') ? resolve() : undefined);
    child.stdout?.on('data', check);
    child.on('exit', () => resolve());
  });
  return {
    ready,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      const last = out.trim().split('\n').at(-1) ?? '{}';
      return JSON.parse(last) as Record<string, number>;
    },
  };
}

/** The flood child: `count` slow-body sockets or nested-body connections against `port` until SIGTERM (at most 2 minutes). */
async function floodChild(kind: string, port: number, count: number): Promise<void> {
  const started = Date.now();
  let stop = false;
  let sent = 0;
  let closedByServer = 0;
  let longest = 0;
  const sockets = new Set<Socket>();
  const finish = () => {
    stop = true;
    for (const s of sockets) s.destroy();
    process.stdout.write(`${JSON.stringify({ sent, closedByServer, longest, ms: Date.now() - started })}\n`);
    process.exit(0);
  };
  process.on('SIGTERM', finish);
  setTimeout(finish, 120_000);
  const url = `http://127.0.0.1:${port}`;
  const chunk = Buffer.alloc(1024, 0x20);
  const slow = async () => {
    while (!stop) {
      let s: Socket;
      try {
        s = await open(port);
      } catch {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      sockets.add(s);
      const opened = Date.now();
      s.write(`POST /v2/process HTTP/1.1\r\nHost: x\r\nContent-Length: 512000\r\n\r\n{"token":"x","pad":"`);
      const timer = setInterval(() => s.writable && s.write(chunk), 1000);
      await new Promise<void>((resolve) =>
        s.on('close', () => {
          clearInterval(timer);
          sockets.delete(s);
          if (!stop) {
            closedByServer++;
            longest = Math.max(longest, Date.now() - opened);
          }
          resolve();
        }),
      );
    }
  };
  const body = nestedBody(undefined);
  const nested = async () => {
    while (!stop) {
      try {
        await fetch(`${url}/v2/process`, { method: 'POST', body }).then((r) => r.text());
        sent++;
      } catch {}
    }
  };
  const attackers = Array.from({ length: count }, () => (kind === 'slow' ? slow() : nested()));
  // Ready once the connections are open and sending.
  await new Promise((r) => setTimeout(r, 300));
  process.stdout.write('ready\n');
  await Promise.all(attackers);
}

if (values.flood !== undefined) await floodChild(values.flood, Number(values.port), Number(values.count));
else await main();
