import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, fixtureDb, fixtures, root } from './helpers.js';
import { tempDir } from './temp-dirs.js';

let db: string;
beforeAll(() => {
  db = fixtureDb();
});

const request = JSON.stringify({
  token: 't',
  cells: [{ radio: 'gsm', mcc: 262, mnc: 1, lac: 10, cid: 1 }],
  address: 0,
});

describe('whereabouts locate', () => {
  it('answers one request from a file', () => {
    const file = join(tempDir('wb-cli-'), 'req.json');
    writeFileSync(file, request);
    const r = cli(['locate', '--db', db, file]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', lat: 52.5, lon: 13.4 });
  });

  it('answers one request from standard input, and exits 1 for an error response', () => {
    expect(cli(['locate', '--db', db, '-'], request).code).toBe(0);
    const bad = cli(['locate', '--db', db], '{"cells":[{"radio":"gsm","mcc":262,"mnc":01,"lac":1,"cid":1}]}');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toEqual({ status: 'error', message: 'Invalid request' });
  });

  it('answers JSON lines one for one, errors included, and skips blank lines', () => {
    const lines = [request, '{broken', '', JSON.stringify({ cells: [] }), request].join('\n');
    const r = cli(['locate', '--db', db, '--jsonl'], lines);
    expect(r.code).toBe(0);
    const out = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(out.map((o) => o.status)).toEqual(['ok', 'error', 'error', 'ok']);
    expect(out[1].message).toBe('Invalid request');
    expect(out[2].message).toBe('No network data provided');
  });

  it('fails clearly, with exit code 1, for a missing or corrupt database', () => {
    const missing = cli(['locate', '--db', join(tmpdir(), 'no-such-wb-db')], request);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no station database in .*whereabouts import/);
    const dir = tempDir('wb-corrupt-');
    writeFileSync(
      join(dir, 'manifest.json'),
      '{"format":1,"generation":1,"created":0,"shards":[{"file":"a.fb","cells":1,"wifi":0,"bytes":9}]}',
    );
    writeFileSync(join(dir, 'a.fb'), 'garbage');
    const corrupt = cli(['locate', '--db', dir], request);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stderr).toMatch(/corrupt station database/);
  });

  it('reports usage mistakes with exit code 2', () => {
    expect(cli(['locate', '--bogus']).code).toBe(2);
    expect(cli(['frobnicate']).code).toBe(2);
    expect(cli(['import', 'x.csv']).stderr).toMatch(/needs --db/);
  });

  it('prints help with exit code 0', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/whereabouts locate/);
  });
});

describe('whereabouts upgrade', () => {
  it('writes a format 6 database again in the current format, then leaves it alone', () => {
    // The core's fixture: a format 6 database written by that format's build.
    const src = join(root, 'crates/whereabouts-core/tests/fixtures/format6');
    // The store format this build writes (bumped with each change of the file layout).
    const current = 8;
    const dir = tempDir('wb-upgrade-');
    for (const f of readdirSync(src).filter((f) => f !== 'README.md'))
      writeFileSync(join(dir, f), readFileSync(join(src, f)));
    const gsm = JSON.stringify({
      token: 't',
      radio: 'gsm',
      mcc: 262,
      mnc: 1,
      cells: [{ lac: 100, cid: 10 }],
    });
    const refused = cli(['locate', '--db', dir], gsm);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `format version 6, this build reads ${current}: convert it with \`whereabouts upgrade --db ${dir}\``,
    );

    const up = cli(['upgrade', '--db', dir, '--quiet']);
    expect(up.code).toBe(0);
    expect(up.stderr).toContain('store format 6 written again in the current one: 8 cells, 3 WiFi APs');
    const answer = JSON.parse(cli(['locate', '--db', dir], gsm).stdout);
    expect(answer).toMatchObject({ status: 'ok' });
    expect(answer.lat).toBeCloseTo(52.501235, 6);

    const again = cli(['upgrade', '--db', dir]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(`already store format ${current}, left as it is`);
  });

  it('needs --db, and fails clearly without a database', () => {
    expect(cli(['upgrade']).code).toBe(2);
    const empty = cli(['upgrade', '--db', tempDir('wb-upgrade-empty-')]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('manifest.json missing');
  });
});

describe('whereabouts import', () => {
  it('reports rejected rows with their line numbers and reasons', () => {
    const out = join(tempDir('wb-imp-'), 'db');
    const r = cli(['import', '--quiet', '--db', out, join(fixtures, 'cells.csv')]);
    expect(r.code).toBe(0);
    // Line 7 has a LAC beyond GSM's range, line 8 an unknown radio (line 1 is the header).
    expect(r.stderr).toMatch(/2 rejected/);
    expect(r.stderr).toMatch(/line 7: .*/);
    expect(r.stderr).toMatch(/line 8: .*/);
  });

  it('refuses a file that is not a station export, naming the accepted formats', () => {
    const dir = tempDir('wb-imp-');
    const bad = join(dir, 'notes.csv');
    writeFileSync(bad, 'name,value\na,1\n');
    const r = cli(['import', '--db', join(dir, 'db'), bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/radio,mcc,net,area,cell/);
  });

  it('reads a station export from standard input as FILE -', () => {
    const out = join(tempDir('wb-imp-'), 'db');
    const csv = readFileSync(join(fixtures, 'cells.csv'), 'utf8');
    const r = cli(['import', '--quiet', '--db', out, '-'], csv);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/standard input: CellCsv, 9 rows, 7 accepted, 2 rejected/);
    expect(JSON.parse(cli(['locate', '--db', out], request).stdout)).toMatchObject({
      status: 'ok',
      lat: 52.5,
    });
  });

  // The input is a named pipe fed half-way, so the import is certainly mid-file (blocked
  // reading) when it is killed: no timing guess.
  it.skipIf(process.platform === 'win32')(
    'killed mid-file, leaves the previous database answering; the next import clears what it left',
    async () => {
      const dir = tempDir('wb-imp-');
      const out = join(dir, 'db');
      expect(cli(['import', '--quiet', '--db', out, join(fixtures, 'cells.csv')]).code).toBe(0);
      const before = readdirSync(out).sort();
      const fifo = join(dir, 'export.csv');
      expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
      const child = spawn(
        process.execPath,
        [join(root, 'bin', 'whereabouts.js'), 'import', '--db', out, fifo],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('exit', (_c, sig) => resolve(sig)),
      );
      const feed = createWriteStream(fifo);
      feed.on('error', () => {}); // EPIPE once the reader is killed: expected
      feed.write(
        'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n',
      );
      for (let cid = 1; cid <= 200_000; cid++) {
        feed.write(`LTE,262,2,5,${cid},,13.4,52.5,1000,3,1,1600000000,1700000000,0\n`);
      }
      await new Promise<void>((resolve) => feed.once('drain', () => resolve()));
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      feed.destroy();
      // what it wrote aside stays aside: the manifest and shards are the previous import's
      expect(
        readdirSync(out)
          .filter((f) => !f.startsWith('.'))
          .sort(),
      ).toEqual(before);
      const answer = JSON.parse(cli(['locate', '--db', out], request).stdout);
      expect(answer).toMatchObject({ status: 'ok', lat: 52.5, lon: 13.4 });
      const lte = { token: 't', cells: [{ radio: 'lte', mcc: 262, mnc: 2, lac: 5, cid: 7 }], address: 0 };
      expect(JSON.parse(cli(['locate', '--db', out], JSON.stringify(lte)).stdout).status).toBe('error');
      // a dead import's lock, staging and temporary files are cleared by the next one
      expect(readdirSync(out).some((f) => f.startsWith('.'))).toBe(true);
      expect(cli(['import', '--quiet', '--db', out, join(fixtures, 'cells.csv')]).code).toBe(0);
      expect(readdirSync(out).filter((f) => f.startsWith('.'))).toEqual([]);
    },
  );
});
