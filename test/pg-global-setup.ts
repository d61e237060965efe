/**
 * vitest global setup: the PostgreSQL tests need a server. `bash scripts/test-all.sh` (and
 * .ci/run) start a throwaway cluster and pass its URL in WHEREABOUTS_TEST_PG_URL; a developer
 * running `npx vitest run` without it gets one started here (scripts/pg-test-cluster.sh, about a
 * second) and stopped at the end. When that fails (PostgreSQL not installed), the reason is
 * passed on and every PostgreSQL test fails with it: they never skip silently.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = join(import.meta.dirname, '..', 'scripts', 'pg-test-cluster.sh');

export default function setup(): (() => void) | undefined {
  if (process.env.WHEREABOUTS_TEST_PG_URL) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'wb-pg-cluster-'));
  const started = spawnSync('bash', [script, 'start', dir], { encoding: 'utf8' });
  const url = started.stdout.trim().split('\n').pop() ?? '';
  if (started.status !== 0 || !url.startsWith('postgres://')) {
    const why = `${started.stderr ?? ''}${started.error?.message ?? ''}`
      .trim()
      .split('\n')
      .slice(-5)
      .join(' | ');
    process.env.WHEREABOUTS_TEST_PG_PROBLEM = `scripts/pg-test-cluster.sh start failed: ${why || `exit ${started.status}`}`;
    spawnSync('bash', [script, 'stop', dir]);
    return undefined;
  }
  process.env.WHEREABOUTS_TEST_PG_URL = url;
  return () => {
    spawnSync('bash', [script, 'stop', dir]);
  };
}
