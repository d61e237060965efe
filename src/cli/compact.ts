/**
 * `whereabouts compact --db DIR`: folds the learned stations of DIR/learned.sqlite into a new
 * database generation now (a running server picks it up within a second; docs/learning.md).
 * With `--store postgres://...` (or WHEREABOUTS_STORE_URL): one learning round of the shared
 * store now, the elected server's round (docs/deploy.md, "Learning across servers"): the new
 * GPS submissions of every server folded into a published generation, installed in DIR too.
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { Engine } from '../engine.js';
import { STATIONS_ONLY } from '../engine-options.js';
import {
  foldSubmissions,
  GenerationStore,
  installPublication,
  updateShared,
  workDirOf,
} from '../generations/index.js';
import { isPostgresUrl, STORE_URL_ENV } from '../tokens/index.js';
import { parseFlags, UsageError } from './usage.js';

/** Runs `whereabouts compact`; resolves to the exit code. */
export async function runCompact(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { db: { type: 'string' }, store: { type: 'string' } });
  if (values.db === undefined) throw new UsageError('compact needs --db DIR');
  if (positionals.length > 0) throw new UsageError(`compact takes no files (got ${positionals.join(' ')})`);
  const store = values.store ?? process.env[STORE_URL_ENV];
  if (values.store !== undefined && !isPostgresUrl(values.store))
    throw new UsageError('compact --store takes a postgres:// URL (the shared store)');
  if (store !== undefined && isPostgresUrl(store)) return compactShared(values.db, store);
  if (!existsSync(values.db)) throw new Error(`${values.db}: no such directory`);
  const engine = await Engine.open({ db: values.db, ...STATIONS_ONLY });
  try {
    const summary = await engine.compact();
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return 0;
  } finally {
    engine.close();
  }
}

/** One round of the shared store, built in DIR's work directory and installed in DIR. */
async function compactShared(db: string, url: string): Promise<number> {
  const generations = await GenerationStore.open(url);
  try {
    const latest = await generations.latest();
    if (latest === undefined && !existsSync(db))
      throw new Error(`${db}: no such directory (the first publication starts from a local database)`);
    const outcome = await updateShared(
      {
        store: generations,
        seed: db,
        work: workDirOf(db),
        publisher: `compact ${hostname()} pid ${process.pid}`,
      },
      foldSubmissions(generations),
    );
    const newest = outcome.published ?? latest;
    if (newest !== undefined) await installPublication(generations, newest, db, { linkFrom: workDirOf(db) });
    process.stdout.write(
      `${JSON.stringify({
        published: outcome.published?.id ?? null,
        publication: newest?.id ?? null,
        generation: newest?.generation ?? null,
        observations: outcome.observations,
        ...outcome.detail,
      })}\n`,
    );
    return 0;
  } finally {
    await generations.close();
  }
}
