/**
 * Shared test setup: a station database imported from the fixtures in test/fixtures
 * through the real CLI, in a temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..');
export const fixtures = join(import.meta.dirname, 'fixtures');

/** Runs the built CLI (bin/whereabouts.js) and returns its exit code and output. */
export function cli(args: string[], input?: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'whereabouts.js'), ...args], {
    input,
    encoding: 'utf8',
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Imports the fixture cells and APs into a new temporary database directory. */
export function fixtureDb(): string {
  const db = join(mkdtempSync(join(tmpdir(), 'wb-test-')), 'db');
  const r = cli(['import', '--quiet', '--db', db, join(fixtures, 'cells.csv'), join(fixtures, 'wifi.csv')]);
  if (r.code !== 0) throw new Error(`fixture import failed: ${r.stderr}`);
  return db;
}
