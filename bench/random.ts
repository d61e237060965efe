/**
 * Reproducible pseudo-random numbers for the benches (mulberry32): the same seed gives the
 * same generated data on every machine, so figures can be reproduced.
 */

/** A generator of numbers in [0, 1) from a 32-bit seed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded generator with the draws a simulated world needs: uniform, normal (Box-Muller, one
 * normal per two uniforms) and a pick from a list. */
export function seeded(seed: number) {
  const next = mulberry32(seed);
  const uniform = (lo: number, hi: number) => lo + (hi - lo) * next();
  const normal = () => {
    const u = Math.max(next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  };
  return { next, uniform, normal, pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)] as T };
}
export type Seeded = ReturnType<typeof seeded>;
