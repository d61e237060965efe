/**
 * Shared test setup: a station database imported from the fixtures in test/fixtures
 * through the real CLI, in a temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Engine, type EngineOptions } from '../src/engine.js';
import { LearnBatcher } from '../src/learning.js';
import { ObservationStore } from '../src/observations/index.js';
import { buildServer } from '../src/server/app.js';
import { TokenStore, type TokenStoreOptions } from '../src/tokens/index.js';

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

/** A server from `buildServer` on 127.0.0.1 and a free port, over temporary token and observation stores. */
export interface TestServer {
  engine: Engine;
  tokens: TokenStore;
  observations: ObservationStore;
  app: FastifyInstance;
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** The directory holding the token and observation stores. */
  store: string;
  close(): Promise<void>;
}

/** Starts a test server; `close` stops it and releases the engine and stores. */
export async function startTestServer(
  options: { engine?: EngineOptions; tokens?: TokenStoreOptions; bodyLimit?: number; learn?: boolean } = {},
): Promise<TestServer> {
  const store = mkdtempSync(join(tmpdir(), 'wb-server-'));
  const engine = await Engine.open(options.engine);
  const tokens = TokenStore.open(store, options.tokens);
  const observations = ObservationStore.open(store);
  const learner = options.learn ? new LearnBatcher((batch) => engine.learnSubmissions(batch)) : undefined;
  const app = buildServer({ engine, tokens, observations, bodyLimit: options.bodyLimit, learner });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return {
    engine,
    tokens,
    observations,
    app,
    base: `http://127.0.0.1:${address.port}`,
    store,
    close: async () => {
      await app.close();
      tokens.close();
      observations.close();
      engine.close();
    },
  };
}
