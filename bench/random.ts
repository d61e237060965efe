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

/**
 * A shadowing field's plane waves, `count` of them (per wave kx, ky, phase), each of a
 * wavelength 1 to 6 times `corrM` in a random direction: their normalised sum (`waveField`) is a
 * smooth random field of variance 1 that decorrelates over about `corrM`.
 */
export function planeWaves(count: number, corrM: number, r: Seeded): number[] {
  const waves: number[] = [];
  for (let i = 0; i < count; i++) {
    const k = (2 * Math.PI) / (corrM * r.uniform(1, 6));
    const a = r.uniform(0, 2 * Math.PI);
    waves.push(k * Math.cos(a), k * Math.sin(a), r.uniform(0, 2 * Math.PI));
  }
  return waves;
}

/** The field of `planeWaves` at (x, y): variance 1. */
export function waveField(waves: readonly number[], x: number, y: number): number {
  let s = 0;
  for (let i = 0; i < waves.length; i += 3)
    s += Math.cos((waves[i] as number) * x + (waves[i + 1] as number) * y + (waves[i + 2] as number));
  return s * Math.sqrt(2 / (waves.length / 3));
}
