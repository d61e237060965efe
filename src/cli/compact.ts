/**
 * `whereabouts compact --db DIR`: folds the learned stations of DIR/learned.sqlite into a new
 * database generation now (a running server picks it up within a second; docs/learning.md).
 */
import { existsSync } from 'node:fs';
import { Engine } from '../engine.js';
import { parseFlags, UsageError } from './usage.js';

/** Runs `whereabouts compact`; resolves to the exit code. */
export async function runCompact(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { db: { type: 'string' } });
  if (values.db === undefined) throw new UsageError('compact needs --db DIR');
  if (positionals.length > 0) throw new UsageError(`compact takes no files (got ${positionals.join(' ')})`);
  if (!existsSync(values.db)) throw new Error(`${values.db}: no such directory`);
  const engine = await Engine.open({
    db: values.db,
    land: false,
    ipDatabases: false,
    timezones: false,
    places: false,
    compaction: false,
  });
  try {
    const summary = await engine.compact();
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return 0;
  } finally {
    engine.close();
  }
}
