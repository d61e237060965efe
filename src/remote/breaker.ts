/**
 * A circuit breaker over the remote service: after `threshold` consecutive failed calls it opens
 * and refuses calls at once (no waiting on a dead service); after `cooldownMs` one probe call may
 * pass (half-open); its success closes the breaker, its failure opens it for another cool-down.
 */

/** The breaker's state as reported by health checks. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** See the module comment. */
export class CircuitBreaker {
  #state: BreakerState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #probing = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly now: () => number,
  ) {}

  /** The current state (an open breaker past its cool-down stays `open` until a call probes). */
  get state(): BreakerState {
    return this.#state;
  }

  /** Consecutive failures counted so far. */
  get failures(): number {
    return this.#failures;
  }

  /** Whether a call may go out now; in half-open only one probe at a time. */
  allow(): boolean {
    if (this.#state === 'closed') return true;
    if (this.#state === 'open') {
      if (this.now() - this.#openedAt < this.cooldownMs) return false;
      this.#state = 'half-open';
    }
    if (this.#probing) return false;
    this.#probing = true;
    return true;
  }

  /** The call got an answer (any answer: a refusal also shows the service is up). */
  success(): void {
    this.#state = 'closed';
    this.#failures = 0;
    this.#probing = false;
  }

  /** The call failed after its retries. */
  failure(): void {
    this.#failures++;
    this.#probing = false;
    if (this.#state === 'half-open' || this.#failures >= this.threshold) {
      this.#state = 'open';
      this.#openedAt = this.now();
    }
  }
}
