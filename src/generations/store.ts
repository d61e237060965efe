/**
 * Station database generations published through PostgreSQL (docs/deploy.md, "Learning
 * across servers"): a publication is a row of `station_generations` announcing a generation
 * (its manifest, its files with their sizes and SHA-256, the submissions folded into it) and
 * its files in 1 MiB chunks of `station_generation_files`, written in one transaction. A
 * reader never sees half a publication, and a publication names the one it was built on:
 * publishing on anything but the newest fails with {@link PublishConflict}, so two publishers
 * (a server's round and a `whereabouts compact` run) never overwrite each other's work.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import type pg from 'pg';
import type { NativeSubmission } from '../learning/submissions.js';
import { openLearningPool } from './schema.js';

/** A file of a publication. */
export interface PublishedFile {
  name: string;
  bytes: number;
  sha256: string;
}

/** Where a learning round resumes in `observations`: after this `(tx, id)`. */
export interface Cursor {
  tx: string;
  id: number;
}

/** The start of `observations`. */
export const START: Cursor = { tx: '0', id: 0 };

/** A published generation. */
export interface Publication {
  id: number;
  /** The publication it was built on; null for the first. */
  base: number | null;
  generation: number;
  /** The text of its `manifest.json`. */
  manifest: string;
  files: PublishedFile[];
  /** Every submission up to here is folded into it. */
  cursor: Cursor;
  /** Submissions this publication folded. */
  observations: number;
  publishedAt: number;
  publisher: string;
}

/** Publishing on a publication that is no longer the newest. */
export class PublishConflict extends Error {}

/** Publications kept: the newest and the two before it (a server may be fetching one). */
const KEEP = 3;
/** Bytes per stored chunk. */
const CHUNK = 1 << 20;
/** Serialises publishers within the database (a transaction advisory lock). */
const PUBLISH_LOCK = '8604003733432115809';
/** NOTIFY channel of publications; the payload is the publication id. */
export const GENERATIONS_CHANNEL = 'whereabouts_generations';

interface PublicationRow {
  id: number;
  base: number | null;
  generation: number;
  manifest: string;
  files: string;
  cursor_tx: string;
  cursor_id: number;
  observations: number;
  published_at: number;
  publisher: string;
}

function publicationOf(r: PublicationRow): Publication {
  return {
    id: r.id,
    base: r.base,
    generation: r.generation,
    manifest: r.manifest,
    files: JSON.parse(r.files) as PublishedFile[],
    cursor: { tx: r.cursor_tx, id: r.cursor_id },
    observations: r.observations,
    publishedAt: r.published_at,
    publisher: r.publisher,
  };
}

/** SHA-256 (hex) and size of a file, read as a stream. */
export async function fileDigest(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** The generations and GPS submissions of a PostgreSQL store; see the module comment. */
export class GenerationStore {
  private constructor(
    private readonly pool: pg.Pool,
    /** The connection settings, for a connection of one's own (the compactor lock). */
    readonly config: pg.ClientConfig,
  ) {}

  /** Connects and brings the learning schema up to date. */
  static async open(url: string, options: { poolSize?: number; connectTimeoutMs?: number } = {}) {
    const { pool, config } = await openLearningPool(url, options);
    return new GenerationStore(pool, config);
  }

  /** The newest publication's id; undefined when nothing was published yet. */
  async latestId(): Promise<number | undefined> {
    const r = await this.pool.query<{ id: number }>(
      'SELECT id FROM station_generations ORDER BY id DESC LIMIT 1',
    );
    return r.rows[0]?.id;
  }

  /** The newest publication; undefined when nothing was published yet. */
  async latest(): Promise<Publication | undefined> {
    const r = await this.pool.query<PublicationRow>(
      `SELECT id, base, generation, manifest, files, cursor_tx::text AS cursor_tx, cursor_id,
         observations, published_at, publisher
       FROM station_generations ORDER BY id DESC LIMIT 1`,
    );
    const row = r.rows[0];
    return row ? publicationOf(row) : undefined;
  }

  /**
   * Writes a publication's file to `to` (aside, then renamed), chunk by chunk; rejects when the
   * publication is gone (superseded and dropped meanwhile) or the bytes do not match.
   */
  async download(publication: Publication, file: PublishedFile, to: string): Promise<void> {
    const part = `${to}.part`;
    const out = await open(part, 'w', 0o600);
    const hash = createHash('sha256');
    let bytes = 0;
    try {
      let part = 0;
      do {
        const r = await this.pool.query<{ data: Buffer }>(
          'SELECT data FROM station_generation_files WHERE generation_id = $1 AND name = $2 AND part = $3',
          [publication.id, file.name, part],
        );
        const data = r.rows[0]?.data;
        if (data === undefined)
          throw new Error(
            `publication ${publication.id} no longer holds ${file.name} (a newer one replaced it)`,
          );
        hash.update(data);
        bytes += data.length;
        await out.write(data);
        part++;
      } while (bytes < file.bytes);
      await out.sync();
    } finally {
      await out.close();
    }
    if (bytes !== file.bytes || hash.digest('hex') !== file.sha256) {
      await rm(part, { force: true });
      throw new Error(`publication ${publication.id}: ${file.name} arrived damaged (size or SHA-256 differ)`);
    }
    await rename(part, to);
  }

  /**
   * Publishes a generation built on `base` (undefined: on nothing, the first publication):
   * the announcement and every file in one transaction, then a NOTIFY. Rejects with
   * {@link PublishConflict} when `base` is no longer the newest publication. Drops the
   * publications older than the newest {@link KEEP}.
   */
  async publish(p: {
    base: number | undefined;
    generation: number;
    manifest: string;
    /** Files by name, read from their paths. */
    files: { name: string; path: string }[];
    cursor: Cursor;
    observations: number;
    publisher: string;
  }): Promise<Publication> {
    const files: PublishedFile[] = [];
    for (const f of p.files) files.push({ name: f.name, ...(await fileDigest(f.path)) });
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [PUBLISH_LOCK]);
      const head = await client.query<{ id: number }>(
        'SELECT id FROM station_generations ORDER BY id DESC LIMIT 1',
      );
      const newest = head.rows[0]?.id;
      if (newest !== p.base)
        throw new PublishConflict(
          `publication ${newest} appeared while this one was built on ${p.base ?? 'nothing'}`,
        );
      const inserted = await client.query<PublicationRow>(
        `INSERT INTO station_generations (base, generation, manifest, files, cursor_tx, cursor_id,
           observations, published_at, publisher)
         VALUES ($1, $2, $3, $4, $5::xid8, $6, $7, $8, $9)
         RETURNING id, base, generation, manifest, files, cursor_tx::text AS cursor_tx, cursor_id,
           observations, published_at, publisher`,
        [
          p.base ?? null,
          p.generation,
          p.manifest,
          JSON.stringify(files),
          p.cursor.tx,
          p.cursor.id,
          p.observations,
          Date.now(),
          p.publisher,
        ],
      );
      const row = inserted.rows[0] as PublicationRow;
      for (const f of p.files) {
        const size = (await stat(f.path)).size;
        const handle = await open(f.path, 'r');
        try {
          const buffer = Buffer.alloc(CHUNK);
          let part = 0;
          for (let at = 0; at < size || part === 0; part++) {
            const { bytesRead } = await handle.read(buffer, 0, CHUNK, at);
            await client.query(
              'INSERT INTO station_generation_files (generation_id, name, part, data) VALUES ($1, $2, $3, $4)',
              [row.id, f.name, part, buffer.subarray(0, bytesRead)],
            );
            at += bytesRead;
            if (bytesRead === 0) break;
          }
        } finally {
          await handle.close();
        }
      }
      await client.query(
        `DELETE FROM station_generations WHERE id IN
           (SELECT id FROM station_generations ORDER BY id DESC OFFSET ${KEEP})`,
      );
      await client.query(`SELECT pg_notify('${GENERATIONS_CHANNEL}', $1)`, [String(row.id)]);
      await client.query('COMMIT');
      return publicationOf(row);
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => {
        broken = e;
      });
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  /**
   * The GPS submissions after `cursor`, oldest first, at most `limit`, as the core learns them
   * (each under its token's hash and device as source), and the cursor after the last. Only
   * rows of transactions older than every running one are read: a round never passes a row
   * that commits later. The rows are ordered by the table's `o.tx` (an xid8), never by the
   * output column `tx`, which is its text: as text `'1000' < '999'`, so a batch that spans a
   * power of ten would end on a cursor before rows it read, and the next round would read
   * (and learn) those again.
   */
  async submissionsAfter(
    cursor: Cursor,
    limit: number,
  ): Promise<{ submissions: NativeSubmission[]; cursor: Cursor }> {
    const r = await this.pool.query<{
      id: number;
      tx: string;
      received_at: number;
      token_hash: string;
      device_id: string | null;
      gps: string;
      cells: string;
      wifi: string;
    }>(
      `SELECT o.id, o.tx::text AS tx, o.received_at, o.token_hash, o.device_id, o.gps, o.cells, o.wifi
       FROM observations o
       WHERE (o.tx, o.id) > ($1::xid8, $2::bigint) AND o.tx < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY o.tx, o.id LIMIT $3`,
      [cursor.tx, cursor.id, limit],
    );
    const submissions = r.rows.map((row) => {
      const s: NativeSubmission = {
        receivedAt: row.received_at,
        gps: row.gps,
        cells: row.cells,
        wifi: row.wifi,
        source: row.token_hash,
      };
      if (row.device_id !== null) s.device = row.device_id;
      return s;
    });
    const last = r.rows[r.rows.length - 1];
    return { submissions, cursor: last ? { tx: last.tx, id: last.id } : cursor };
  }

  /**
   * Deletes a token's stored submissions (by its hash, or the 16-digit key that starts it),
   * folded or not; resolves to how many there were. Rounds after this never learn them.
   */
  async deleteSubmissions(hash: string): Promise<number> {
    const where = hash.length === 64 ? 'token_hash = $1' : 'substr(token_hash, 1, 16) = $1';
    const r = await this.pool.query(`DELETE FROM observations WHERE ${where}`, [hash]);
    return r.rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}
