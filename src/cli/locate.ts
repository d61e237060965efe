/**
 * `whereabouts locate`: one request in, one response out; or JSON lines in and out.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Engine, type EngineOptions } from '../engine.js';
import { parseFlags, UsageError } from './usage.js';

/** How many JSON lines are answered per call into the core. */
const JSONL_BATCH = 1024;

export async function runLocate(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    jsonl: { type: 'boolean' },
    land: { type: 'string' },
    'no-land': { type: 'boolean' },
    'ip-db': { type: 'string', multiple: true },
    now: { type: 'string' },
  });
  if (positionals.length > 1) throw new UsageError('locate takes at most one FILE');
  const options: EngineOptions = {};
  if (values.db !== undefined) options.db = values.db;
  if (values['no-land']) options.land = false;
  else if (values.land !== undefined) options.land = values.land;
  if (values['ip-db']) options.ipDatabases = values['ip-db'];
  if (values.now !== undefined) {
    const now = Number(values.now);
    if (!Number.isFinite(now)) throw new UsageError('--now takes unix seconds');
    options.now = now;
  }
  const file = positionals[0] ?? '-';
  const engine = await Engine.open(options);
  try {
    if (values.jsonl) return await locateLines(engine, file);
    const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
    // Parse the text ourselves: the library API takes objects, the CLI takes the wire body.
    const response = engine.process(parseJson(text));
    process.stdout.write(`${JSON.stringify(response)}\n`);
    return response.status === 'ok' ? 0 : 1;
  } finally {
    engine.close();
  }
}

async function locateLines(engine: Engine, file: string): Promise<number> {
  const input = file === '-' ? process.stdin : createReadStream(file);
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let batch: unknown[] = [];
  const flush = async () => {
    // processBatch reads the parsed values straight into the core's wire format: no
    // LocateRequest objects on the way (a line that is not JSON answers Invalid request)
    const out = engine
      .processBatch(batch)
      .map((a) => JSON.stringify(a))
      .join('\n');
    batch = [];
    if (!process.stdout.write(`${out}\n`)) await new Promise((r) => process.stdout.once('drain', r));
  };
  for await (const line of lines) {
    if (line.trim() === '') continue;
    batch.push(parseJson(line));
    if (batch.length >= JSONL_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  return 0;
}

/** A line's JSON value; `undefined` (answered `Invalid request`, as spec 2.2 wants) when malformed. */
function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
