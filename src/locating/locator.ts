/**
 * Locating: `/process` requests validated ({@link RequestReader}), encoded for the core
 * ({@link WireBuffers}), solved there, and shaped into responses; the threaded batch pipeline
 * of `processBatch`; the remote policy of `locate`.
 */
import type { LocateFunction } from '../native/binding.js';
import type { NativeHandle } from '../native/handle.js';
import { ANSWER, WireBuffers } from '../native/wire.js';
import type { RemotePolicy, RemoteStatus } from '../remote/policy.js';
import {
  type LocateRequest,
  type ParseOptions,
  parseRequest,
  RequestReader,
  rowsOf,
} from './request/index.js';
import { type AddressLookup, errorResponse, type ProcessResponse, shapeAnswer } from './response.js';

/*
 * The batch pipeline's sizes, chosen with `npx tsx bench/batch.ts` (the pipelined
 * `processBatch` beside the unpipelined loop in one process; the runs are in
 * docs/experiments.md).
 */

/** Requests read, solved and shaped together on one thread: the wire stays within 4,096 numbers. */
const BATCH_CHUNK = 64;

/** Requests a `radiusSamples` call sends to the core at a time (a calibration's rows are few). */
const SAMPLES_CHUNK = 4096;
/**
 * Requests read at a time by a threaded `processBatch`: each chunk is solved on the batch
 * threads while the next is read. Larger chunks overlap less of the batch.
 */
const PIPELINE_CHUNK = 256;
/** The first chunk of a threaded batch, small because the batch threads idle while it is read. */
const FIRST_PIPELINE_CHUNK = 64;
/** Batches of at most this many stay on the calling thread: waking the batch threads costs more. */
const SOLO_BATCH = 128;

/** The valid requests of a `processBatch` chunk: where each answer goes and how it is shaped. */
class ChunkRequests {
  /** Index in the batch of each valid request. */
  readonly slots: number[] = [];
  readonly geolocations: (0 | 1)[] = [];
  readonly addresses: (0 | 1 | 2)[] = [];
  readonly languages: (string | undefined)[] = [];
  valid = 0;
  /** The chunk's `locateStart` ticket while it is being solved. */
  ticket = 0;

  /** Shapes the answers, {@link ANSWER} numbers each from `buffer[at]` on, into `out`. */
  shape(out: ProcessResponse[], buffer: Float64Array, at: number, addressOf: AddressLookup): void {
    for (let k = 0; k < this.valid; k++) {
      out[this.slots[k] as number] = shapeAnswer(
        this.geolocations[k] as 0 | 1,
        this.addresses[k] as 0 | 1 | 2,
        this.languages[k],
        buffer,
        at + k * ANSWER,
        addressOf,
      );
    }
  }
}

/** The locating part of an `Engine`: its methods are the engine's `process`, `processBatch`, `locate`. */
export class Locator {
  readonly #handle: NativeHandle;
  /** The native locate call, bound to the database (`NativeEngine.locateFunction`). */
  readonly #locate: LocateFunction;
  /** Threads a `processBatch` chunk may be solved on (`EngineOptions.batchThreads`). */
  readonly #batchThreads: number;
  readonly #parse: ParseOptions;
  readonly #remote: RemotePolicy | undefined;
  readonly #addressOf: AddressLookup;
  readonly #wire = new WireBuffers();
  /** The validator of process and processBatch (one request at a time). */
  readonly #reader = new RequestReader();
  /** Whether process or processBatch is using the reader and the wire. */
  #busy = false;
  /**
   * Per valid request of a processBatch chunk: its index, and what shaping its answer needs.
   * Two: a threaded batch reads a chunk into one while the other's is being solved.
   */
  readonly #chunks = [new ChunkRequests(), new ChunkRequests()] as const;
  /** Where a threaded batch's answers are written (`locateJoin`). */
  #answers = new Float64Array(PIPELINE_CHUNK * ANSWER);

  constructor(
    handle: NativeHandle,
    parse: ParseOptions,
    batchThreads: number,
    remote: RemotePolicy | undefined,
    addressOf: AddressLookup,
  ) {
    this.#handle = handle;
    this.#locate = handle.native.locateFunction();
    this.#parse = parse;
    this.#batchThreads = batchThreads;
    this.#remote = remote;
    this.#addressOf = addressOf;
  }

  /**
   * Answers one `/process` request object (spec 2.2) with the response object (spec 2.8).
   * Invalid requests get the spec's error message; this method never throws for bad input.
   */
  process(request: unknown): ProcessResponse {
    this.#handle.assertOpen();
    // A getter of the request may call back into the engine while the reader and the wire
    // are in use: such a call takes the way that shares neither.
    if (this.#busy) return this.#processAside(request);
    this.#busy = true;
    try {
      const reader = this.#reader;
      const message = reader.read(request, this.#parse);
      if (message !== undefined) return errorResponse(message);
      const wire = this.#wire;
      wire.clear();
      wire.append(reader);
      return this.#answerOne(wire, reader.geolocation, reader.address, reader.acceptLanguage);
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Answers many requests in one call into the core: the fast path for bulk work, solved on
   * up to `batchThreads` threads (see {@link Engine.open}). The answers are in the order of
   * the requests, exactly those {@link Engine.process} gives one at a time.
   */
  processBatch(requests: readonly unknown[]): ProcessResponse[] {
    this.#handle.assertOpen();
    if (this.#busy) return requests.map((r) => this.#processAside(r));
    this.#busy = true;
    try {
      return this.#processBatch(requests);
    } finally {
      this.#busy = false;
    }
  }

  #processBatch(requests: readonly unknown[]): ProcessResponse[] {
    const out: ProcessResponse[] = new Array(requests.length);
    const wire = this.#wire;
    // A small batch stays here: the batch threads would wake when the calling thread had
    // solved most of it.
    if (this.#batchThreads === 1 || requests.length <= SOLO_BATCH) {
      const c = this.#chunks[0];
      for (let start = 0; start < requests.length; start += BATCH_CHUNK) {
        // Read, solve and shape a chunk at a time: the wire buffer then stays small (a chunk
        // of requests fits its first 4,096 numbers) and so do the per-request arrays.
        this.#readChunk(requests, start, Math.min(requests.length, start + BATCH_CHUNK), c, out);
        if (c.valid === 0) continue;
        wire.reserveAnswers(c.valid);
        this.#locate(wire.buffer, wire.length, wire.ipsArgument());
        c.shape(out, wire.buffer, wire.length, this.#addressOf);
      }
      return out;
    }
    // Threaded: a chunk is started on the batch threads, then the next one is read here while
    // they solve it, then the first is joined (this thread solving what they have not taken)
    // and shaped. Reading and shaping are nearly half of a request's time in a batch (0.95 of
    // 2.07 us on one thread): overlapped, they no longer idle the other cores.
    let pending: ChunkRequests | undefined;
    let turn = 0;
    try {
      // The batch threads idle while the first chunk is read, so the chunks start small and
      // double up to PIPELINE_CHUNK.
      let size = FIRST_PIPELINE_CHUNK;
      for (let start = 0; start < requests.length; start += size, size = Math.min(PIPELINE_CHUNK, size * 2)) {
        const c = this.#chunks[turn] as ChunkRequests;
        turn ^= 1;
        this.#readChunk(requests, start, Math.min(requests.length, start + size), c, out);
        if (c.valid > 0) {
          c.ticket = this.#handle.native.locateStart(
            wire.buffer,
            wire.length,
            wire.ipsArgument(),
            this.#batchThreads,
          );
        }
        const previous = pending;
        pending = c.valid > 0 ? c : undefined;
        if (previous !== undefined) this.#joinChunk(previous, out);
      }
      const last = pending;
      pending = undefined;
      if (last !== undefined) this.#joinChunk(last, out);
    } finally {
      // Thrown out of the loop (a native error): the chunk started last is still joined, so
      // that no batch is left pending (a failed join has taken its own).
      if (pending !== undefined) {
        try {
          this.#handle.native.locateJoin(pending.ticket, this.#answers);
        } catch {
          // the error already thrown is the one to report
        }
      }
    }
    return out;
  }

  /**
   * Rows of a radius calibration (`whereabouts calibrate`): each request located without the
   * database's radius model, with its class in that model and its error over the radius, the
   * device having been at `truths[i]`. A request that is invalid or gets no answer has class
   * '' and ratio NaN.
   */
  radiusSamples(
    requests: readonly unknown[],
    truths: readonly { lat: number; lon: number }[],
  ): { classes: string[]; ratios: number[] } {
    this.#handle.assertOpen();
    if (requests.length !== truths.length) throw new Error('radiusSamples: one truth per request');
    if (this.#busy) throw new Error('radiusSamples called while the engine is answering');
    this.#busy = true;
    try {
      const classes: string[] = new Array(requests.length).fill('');
      const ratios: number[] = new Array(requests.length).fill(Number.NaN);
      const reader = this.#reader;
      const wire = this.#wire;
      for (let start = 0; start < requests.length; start += SAMPLES_CHUNK) {
        const end = Math.min(requests.length, start + SAMPLES_CHUNK);
        wire.clear();
        const slots: number[] = [];
        for (let i = start; i < end; i++) {
          if (reader.read(requests[i], this.#parse) !== undefined) continue;
          wire.append(reader);
          slots.push(i);
        }
        if (slots.length === 0) continue;
        const lat = Float64Array.from(slots, (i) => (truths[i] as { lat: number }).lat);
        const lon = Float64Array.from(slots, (i) => (truths[i] as { lon: number }).lon);
        const out = this.#handle.native.radiusSamples(wire.buffer, wire.length, wire.ipsArgument(), lat, lon);
        slots.forEach((i, k) => {
          classes[i] = out.classes[k] as string;
          ratios[i] = out.ratios[k] as number;
        });
      }
      return { classes, ratios };
    } finally {
      this.#busy = false;
    }
  }

  /** Reads `requests[start..end)` into the wire (cleared first) and `c`; invalid ones are answered in `out`. */
  #readChunk(
    requests: readonly unknown[],
    start: number,
    end: number,
    c: ChunkRequests,
    out: ProcessResponse[],
  ): void {
    const reader = this.#reader;
    const wire = this.#wire;
    wire.clear();
    let valid = 0;
    for (let i = start; i < end; i++) {
      const message = reader.read(requests[i], this.#parse);
      if (message !== undefined) {
        out[i] = errorResponse(message);
        continue;
      }
      wire.append(reader);
      c.slots[valid] = i;
      c.geolocations[valid] = reader.geolocation;
      c.addresses[valid] = reader.address;
      c.languages[valid] = reader.acceptLanguage;
      valid++;
    }
    c.valid = valid;
  }

  /** Waits for chunk `c`, started with `locateStart`, and shapes its answers into `out`. */
  #joinChunk(c: ChunkRequests, out: ProcessResponse[]): void {
    if (this.#answers.length < c.valid * ANSWER) this.#answers = new Float64Array(c.valid * ANSWER);
    this.#handle.native.locateJoin(c.ticket, this.#answers);
    c.shape(out, this.#answers, 0, this.#addressOf);
  }

  /** {@link Engine.process} for a call made while another holds the reader and the wire. */
  #processAside(request: unknown): ProcessResponse {
    const parsed = parseRequest(request, this.#parse);
    return parsed.ok ? this.#solveOne(parsed.request) : errorResponse(parsed.message);
  }

  /**
   * Answers one `/process` request under the `remote` policy of {@link Engine.open}: may ask the
   * remote service (the only engine call that may touch the network). Without a remote, or in
   * `local` mode, it resolves the same answer as {@link Engine.process}. An invalid request gets
   * the spec's error and never goes out. Never rejects for bad input or a failing remote.
   */
  async locate(request: unknown): Promise<ProcessResponse> {
    this.#handle.assertOpen();
    const parsed = parseRequest(request, this.#parse);
    if (!parsed.ok) return errorResponse(parsed.message);
    return this.locateParsed(parsed.request);
  }

  /** {@link Engine.locate} for an already-validated request (the server validates once). */
  async locateParsed(request: LocateRequest): Promise<ProcessResponse> {
    this.#handle.assertOpen();
    const local = () => {
      // The remote layer may call this after an await, when the engine may have closed.
      this.#handle.assertOpen();
      return this.#solveOne(request);
    };
    return this.#remote === undefined ? local() : this.#remote.answer(request, local);
  }

  /** The remote layer's mode, breaker, regions and cache; undefined without `remote`. */
  remoteStatus(): RemoteStatus | undefined {
    return this.#remote?.status();
  }

  /** Answers one validated request object. */
  #solveOne(request: LocateRequest): ProcessResponse {
    // Outside a call of process or processBatch, as the remote layer's may be: the wire
    // is free unless a getter of theirs brought us here.
    const wire = this.#busy ? new WireBuffers() : this.#wire;
    wire.clear();
    wire.append(rowsOf(request));
    return this.#answerOne(wire, request.geolocation, request.address, request.acceptLanguage);
  }

  /** Locates the one request encoded in `wire` and shapes its response. */
  #answerOne(
    wire: WireBuffers,
    geolocation: LocateRequest['geolocation'],
    address: LocateRequest['address'],
    acceptLanguage: string | undefined,
  ): ProcessResponse {
    wire.reserveAnswers(1);
    this.#locate(wire.buffer, wire.length, wire.ipsArgument());
    return shapeAnswer(geolocation, address, acceptLanguage, wire.buffer, wire.answerAt(0), this.#addressOf);
  }
}
