/**
 * Temporary directories for tests, removed when the test file ends: a test run must not leave
 * its databases, stores and logs behind in the system's temporary directory (tens of MB a run).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

// Registered when a test file first imports this module: vitest runs `afterAll` hooks in reverse
// order of registration, so this one runs after the file's own (servers and engines closed first).
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** A new empty directory under the system's temporary directory, named `PREFIX` + random. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
