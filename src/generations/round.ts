/**
 * A change to the shared station database (docs/deploy.md, "Learning across servers"): bring
 * a work directory to the newest publication (or, before the first, to a copy of a local
 * database), change it there with the core's own machinery (fold the new GPS submissions into
 * the overlay and compact; or learn files), and publish the result on that publication. When
 * another publisher came first, the work is thrown away and done again on the newer one.
 *
 * The learner's state (`learned.sqlite`: what each token gave each station, quarantines, held
 * suspects, blocks) travels with every publication, so whoever does the next round (another
 * server after a takeover, a `whereabouts compact` run) starts from exactly the state the
 * last round left: the per-token caps, the 3-token agreement and the quarantine hold across
 * servers and across takeovers.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Engine } from '../engine.js';
import { STATIONS_ONLY } from '../engine-options.js';
import type { LearnCounts } from '../learning/submissions.js';
import {
  clearInstalled,
  installedPublication,
  installPublication,
  manifestShards,
  markInstalled,
  publishedFiles,
  seedFrom,
  withLockFile,
} from './install.js';
import { type Cursor, type GenerationStore, type Publication, PublishConflict, START } from './store.js';

/** What a change did in the work directory; undefined: nothing to publish. */
export interface ChangeDone<T> {
  /** The submissions folded so far (the input cursor when the change reads none). */
  cursor: Cursor;
  /** Submissions this change folded. */
  observations: number;
  detail: T;
}

/** Changes the work directory, which holds the newest publication (whose cursor it is given). */
export type SharedChange<T> = (work: string, cursor: Cursor) => Promise<ChangeDone<T> | undefined>;

/** Options of {@link updateShared}. */
export interface SharedUpdateOptions {
  store: GenerationStore;
  /** The local database the first publication starts from. */
  seed: string;
  /** The work directory (replaced as needed). */
  work: string;
  /** Who publishes (host and pid), kept with the publication. */
  publisher: string;
  /** Tries when other publishers come first (default 3). */
  attempts?: number;
}

/** What {@link updateShared} did. */
export interface SharedOutcome<T> {
  /** The publication made; undefined when there was nothing to publish. */
  published?: Publication;
  observations: number;
  detail?: T;
}

/** The work directory of the servers' rounds inside a station database directory. */
export function workDirOf(db: string): string {
  return join(db, '.shared-work');
}

/** Runs `change` on the newest publication and publishes the result; see the module comment. */
export async function updateShared<T>(
  options: SharedUpdateOptions,
  change: SharedChange<T>,
): Promise<SharedOutcome<T>> {
  // One change at a time per work directory, across processes (a server's round and a command
  // given the same directory).
  await mkdir(dirname(options.work), { recursive: true });
  return withLockFile(`${options.work}.lock`, () => update(options, change));
}

async function update<T>(options: SharedUpdateOptions, change: SharedChange<T>): Promise<SharedOutcome<T>> {
  const { store, work } = options;
  const attempts = options.attempts ?? 3;
  const scratch = join(work, '.shared-publish');
  for (let attempt = 1; ; attempt++) {
    const latest = await store.latest();
    if (latest === undefined) await seedFrom(options.seed, work);
    else if (installedPublication(work) !== latest.id) {
      // Not exactly a publication (a round that lost a race, another compactor's, a crash):
      // what it holds is worth nothing; it is rebuilt from the newest publication.
      await rm(work, { recursive: true, force: true });
      await installPublication(store, latest, work, { state: true });
    }
    // From here the directory differs from every publication until this one is published.
    await clearInstalled(work);
    const done = await change(work, latest?.cursor ?? START);
    if (done === undefined) {
      if (latest !== undefined) await markInstalled(work, latest.id);
      return { observations: 0 };
    }
    try {
      const manifest = readFileSync(join(work, 'manifest.json'), 'utf8');
      const published = await store.publish({
        base: latest?.id,
        generation: manifestShards(manifest).generation,
        manifest,
        files: await publishedFiles(work, scratch),
        cursor: done.cursor,
        observations: done.observations,
        publisher: options.publisher,
      });
      await markInstalled(work, published.id);
      return { published, observations: done.observations, detail: done.detail };
    } catch (err) {
      if (!(err instanceof PublishConflict) || attempt >= attempts) throw err;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
}

/** Submissions learned per call into the core (one learning transaction each). */
const LEARN_BATCH = 2000;

/**
 * The round of the elected server and of `whereabouts compact --store`: the GPS submissions
 * after the cursor (at most `max`) are learned into the work directory's overlay, each under
 * its token as source, with the same rules as live learning on one server, then folded into a
 * new generation by the core's compaction. Nothing to do when no submission is new.
 */
export function foldSubmissions(store: GenerationStore, max = 200_000): SharedChange<LearnCounts> {
  return async (work, cursor) => {
    const { submissions, cursor: next } = await store.submissionsAfter(cursor, max);
    if (submissions.length === 0) return undefined;
    const engine = await Engine.open({ db: work, ...STATIONS_ONLY });
    const counts: LearnCounts = {
      observations: 0,
      outliers: 0,
      capped: 0,
      quarantined: 0,
      added: 0,
      refined: 0,
      moved: 0,
      relearned: 0,
      blocked: 0,
      seconds: 0,
    };
    try {
      for (let at = 0; at < submissions.length; at += LEARN_BATCH) {
        const c = await engine.learnSubmissions(submissions.slice(at, at + LEARN_BATCH));
        for (const key of Object.keys(counts) as (keyof LearnCounts)[]) counts[key] += c[key];
      }
      await engine.compact();
    } finally {
      engine.close();
    }
    return { cursor: next, observations: submissions.length, detail: counts };
  };
}
