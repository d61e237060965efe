/**
 * The workload of bench/speed.ts and bench/speed-parts.ts: every scenario's requests of the
 * simulator world of bench/accuracy.ts (.eval/, built on first use), interleaved.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type SimWorld, simWorld } from './sim-world.js';

/** The simulator world of `seed` (1,000 requests a scenario), built first when missing. */
export function speedWorld(seed: string): Promise<SimWorld> {
  return simWorld(seed, '1000', true);
}

/** A mixed workload: every scenario's requests of `world`, interleaved in a fixed order. */
export function mixedRequests(world: string): unknown[] {
  const requests: unknown[] = [];
  for (const f of readdirSync(join(world, 'scenarios')).sort()) {
    for (const line of readFileSync(join(world, 'scenarios', f), 'utf8').split('\n')) {
      if (line.trim()) requests.push((JSON.parse(line) as { request: unknown }).request);
    }
  }
  for (let i = requests.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1);
    [requests[i], requests[j]] = [requests[j], requests[i]];
  }
  return requests;
}
