/**
 * The open native engine and its lifetime: the parts of an `Engine` share one, and the data is
 * released only after the last native call running on a worker thread has settled.
 */
import type { NativeEngine } from './binding.js';

export class NativeHandle {
  readonly native: NativeEngine;
  #closed = false;
  /** Native calls still running on worker threads. */
  #inflight = 0;

  constructor(native: NativeEngine) {
    this.native = native;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Throws once the engine is closed. */
  assertOpen(): void {
    if (this.#closed) throw new Error('the engine is closed');
  }

  /**
   * Counts a native call that runs on a worker thread. Such a call keeps the native engine
   * borrowed until it settles, so the release waits for the last.
   */
  async track<T>(call: Promise<T>): Promise<T> {
    this.#inflight++;
    try {
      return await call;
    } finally {
      if (--this.#inflight === 0 && this.#closed) this.native.close();
    }
  }

  /** Marks the engine closed; releases the native data now, or after the last tracked call. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inflight === 0) this.native.close();
  }
}
