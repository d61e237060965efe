/**
 * Cases timed in turn over several rounds, with ratios taken within a round: load on these
 * shared machines drifts over seconds, so a ratio of two medians taken minutes apart would
 * mix two loads. Used by bench/speed.ts and bench/batch.ts.
 */
import type { Bench } from 'tinybench';

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Every round's median ns per request of each case of `bench`, in the order of its tasks. */
export class Rounds {
  readonly names: string[];
  readonly perRound: number[][] = [];

  private constructor(names: string[]) {
    this.names = names;
  }

  /**
   * Runs `bench` `rounds` times; a case's median call time is divided by `requestsPerCall(name)`
   * (1 for a case of one request a call).
   */
  static async run(bench: Bench, rounds: number, requestsPerCall: (name: string) => number): Promise<Rounds> {
    const r = new Rounds(bench.tasks.map((t) => t.name));
    for (let round = 0; round < Math.max(1, rounds); round++) {
      await bench.run();
      r.perRound.push(
        r.names.map((n) => {
          const p50 = bench.tasks.find((x) => x.name === n)?.result?.latency.p50;
          return p50 === undefined ? Number.NaN : (p50 * 1e6) / requestsPerCall(n);
        }),
      );
    }
    return r;
  }

  /** The median over rounds of case `k`'s ns per request. */
  ns(k: number): number {
    return median(this.perRound.map((r) => r[k] as number));
  }

  /** The median over rounds of case `a`'s time over case `b`'s: how many times faster `b` is. */
  ratio(a: number, b: number): string {
    return median(this.perRound.map((r) => (r[a] as number) / (r[b] as number))).toFixed(2);
  }
}
