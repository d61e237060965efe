/**
 * One writer for the token store under node:cluster.
 *
 * SQLite lets one connection write at a time. When every worker committed its own charges,
 * a worker that found the write lock taken slept in SQLite's busy handler, and that sleep
 * stopped its whole event loop: two workers served fewer requests than one. So the primary
 * process holds the only writing {@link TokenStore}: workers send their charges and rate-limit
 * hits over the cluster IPC channel, gathered per event-loop turn into one message; the primary
 * submits them all to the store's group commit (one transaction) and answers once it has
 * committed. A charge is therefore still durable before the worker's response leaves. Workers
 * keep their own read-only use of the store (`get`, `balance`): WAL readers never wait.
 */
import type {
  AdmitOutcome,
  ChargeOutcome,
  MeteredService,
  TokenStorage,
  TokenStore,
} from '../tokens/index.js';

/**
 * What the routes need of the token store: a {@link TokenStore} (SQLite), a PgTokenStore
 * (PostgreSQL: `balance` is asynchronous, so routes `await` it) or a {@link LedgerClient}.
 */
export type TokenAccess = Pick<TokenStorage, 'get' | 'balance' | 'admit' | 'charge' | 'hit'> & {
  /** Resolves when the store answers, rejects when it does not (`/health`); absent: always answers. */
  ping?: () => Promise<void>;
};

type Job =
  | {
      kind: 'charge';
      token: string;
      service: MeteredService;
      units?: number;
      deviceId?: string;
      admitted?: boolean;
    }
  | { kind: 'admit'; token: string; service?: MeteredService }
  | { kind: 'hit'; token: string; bucket: string; perSecond: number };

type Outcome = ChargeOutcome | AdmitOutcome | boolean;
type JobResult = { ok: true; value: Outcome } | { ok: false; error: string };

/** Worker to primary. */
export interface LedgerRequest {
  type: 'whereabouts:ledger';
  id: number;
  jobs: Job[];
}

/** Primary to worker. */
export interface LedgerReply {
  type: 'whereabouts:ledger-reply';
  id: number;
  results: JobResult[];
}

/** The IPC endpoint a worker (or the primary's view of one) talks through. */
export interface Channel {
  send(message: unknown): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** Primary side: answers a worker's ledger requests from `store`. */
export function serveLedger(store: TokenStore, channel: Channel): void {
  channel.on('message', (message) => {
    const m = message as LedgerRequest;
    if (m?.type !== 'whereabouts:ledger' || !Array.isArray(m.jobs)) return;
    // Submitted in one turn, so they share one group commit.
    const pending = m.jobs.map((job): Promise<Outcome> => {
      if (job.kind === 'charge')
        return store.charge(job.token, job.service, {
          ...(job.units === undefined ? {} : { units: job.units }),
          ...(job.deviceId === undefined ? {} : { deviceId: job.deviceId }),
          ...(job.admitted === undefined ? {} : { admitted: job.admitted }),
        });
      if (job.kind === 'admit') return store.admit(job.token, job.service);
      return store.hit(job.token, job.bucket, job.perSecond);
    });
    Promise.allSettled(pending).then((settled) => {
      const results: JobResult[] = settled.map((s) =>
        s.status === 'fulfilled' ? { ok: true, value: s.value } : { ok: false, error: String(s.reason) },
      );
      try {
        channel.send({ type: 'whereabouts:ledger-reply', id: m.id, results } satisfies LedgerReply);
      } catch {
        // The worker is gone; its requests died with it.
      }
    });
  });
}

interface Waiting {
  resolve: (v: Outcome) => void;
  reject: (e: Error) => void;
}

/**
 * Worker side: a {@link TokenAccess} whose writes go to the primary and whose reads use the
 * worker's own `reader` store.
 */
export class LedgerClient implements TokenAccess {
  #nextId = 1;
  #queue: { job: Job; waiting: Waiting }[] = [];
  #scheduled = false;
  readonly #inFlight = new Map<number, Waiting[]>();

  constructor(
    private readonly reader: TokenStore,
    private readonly channel: Channel & { connected?: boolean },
  ) {
    channel.on('message', (message) => this.#onReply(message as LedgerReply));
  }

  get(token: string) {
    return this.reader.get(token);
  }

  balance(token: string, service: MeteredService): number {
    return this.reader.balance(token, service);
  }

  charge(
    token: string,
    service: MeteredService,
    options: { units?: number; deviceId?: string; admitted?: boolean } = {},
  ): Promise<ChargeOutcome> {
    const job: Job = { kind: 'charge', token, service };
    if (options.units !== undefined) job.units = options.units;
    if (options.deviceId !== undefined) job.deviceId = options.deviceId;
    if (options.admitted !== undefined) job.admitted = options.admitted;
    return this.#submit(job) as Promise<ChargeOutcome>;
  }

  admit(token: string, service?: MeteredService): Promise<AdmitOutcome> {
    const job: Job = { kind: 'admit', token };
    if (service !== undefined) job.service = service;
    return this.#submit(job) as Promise<AdmitOutcome>;
  }

  hit(token: string, bucket: string, perSecond: number): Promise<boolean> {
    return this.#submit({ kind: 'hit', token, bucket, perSecond }) as Promise<boolean>;
  }

  /** Fails everything still waiting (the primary went away). */
  failAll(reason: string): void {
    const error = new Error(reason);
    for (const waiting of this.#inFlight.values()) for (const w of waiting) w.reject(error);
    this.#inFlight.clear();
    for (const q of this.#queue) q.waiting.reject(error);
    this.#queue = [];
  }

  #submit(job: Job): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, waiting: { resolve, reject } });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    const id = this.#nextId++;
    this.#inFlight.set(
      id,
      batch.map((b) => b.waiting),
    );
    const fail = (reason: string) => {
      this.#inFlight.delete(id);
      for (const b of batch) b.waiting.reject(new Error(reason));
    };
    if (this.channel.connected === false) {
      fail('the primary process is gone');
      return;
    }
    try {
      // A false return is only back-pressure: the message is queued and will be delivered.
      this.channel.send({
        type: 'whereabouts:ledger',
        id,
        jobs: batch.map((b) => b.job),
      } satisfies LedgerRequest);
    } catch (err) {
      fail(`cannot reach the primary process: ${(err as Error).message}`);
    }
  }

  #onReply(m: LedgerReply): void {
    if (m?.type !== 'whereabouts:ledger-reply') return;
    const waiting = this.#inFlight.get(m.id);
    if (!waiting) return;
    this.#inFlight.delete(m.id);
    for (let i = 0; i < waiting.length; i++) {
      const w = waiting[i] as Waiting;
      const r = m.results[i];
      if (r?.ok) w.resolve(r.value);
      else w.reject(new Error(r?.error ?? 'no result'));
    }
  }
}
