/**
 * `whereabouts calibrate`: fits the database's radius model on the user's own ground truth
 * (src/calibration/radius.ts), prints the inside shares before and after on a held-out part,
 * stores the model (unless --dry-run); `--show` prints the stored model, `--reset` removes it.
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  calibrate,
  formatModel,
  formatShares,
  readCalibrationRows,
  resetRadiusModel,
  storedRadiusModel,
} from '../calibration/radius.js';
import type { BadLine } from '../eval/inputs.js';
import { ProgressLine } from './progress.js';
import { networkFlags, parseFlags, UsageError } from './usage.js';

/** Malformed lines shown with their reasons; the rest are counted. */
const SHOWN_BAD_LINES = 20;

/** Fails clearly unless `db` holds a station database that this process may write. */
export function checkWritableDb(db: string): void {
  if (!existsSync(join(db, 'manifest.json')))
    throw new Error(`no station database in ${db} (manifest.json missing)`);
  try {
    accessSync(db, constants.W_OK);
  } catch {
    throw new Error(
      `${db} is not writable: the radius model is stored there (use --dry-run to only print it)`,
    );
  }
}

export async function runCalibrate(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {
    db: { type: 'string' },
    mcc: { type: 'string' },
    mnc: { type: 'string' },
    'dry-run': { type: 'boolean' },
    reset: { type: 'boolean' },
    show: { type: 'boolean' },
    json: { type: 'boolean' },
    now: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  const db = values.db;
  if (!db) throw new UsageError('calibrate needs --db DIR');
  const json = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  if (values.show || values.reset) {
    if (values.show && values.reset) throw new UsageError('give one of --show and --reset');
    if (positionals.length > 0) throw new UsageError('no FILE with --show or --reset');
    if (values.show) {
      const model = storedRadiusModel(db);
      if (values.json) json({ calibration: model ?? null });
      else
        process.stdout.write(
          model
            ? `${formatModel(model)}\n`
            : `no radius model stored in ${db}: answers carry the engine's own radii\n`,
        );
      return 0;
    }
    checkWritableDb(db);
    const had = resetRadiusModel(db);
    process.stderr.write(
      had ? `radius model removed from ${db}\n` : `no radius model was stored in ${db}; nothing to remove\n`,
    );
    return 0;
  }
  if (positionals.length === 0)
    throw new UsageError('calibrate needs at least one FILE (or --show, --reset)');
  const { mcc, mnc } = networkFlags(values);
  let now: number | undefined;
  if (values.now !== undefined) {
    now = Number(values.now);
    if (!Number.isFinite(now)) throw new UsageError('--now takes unix seconds');
  }
  if (values['dry-run']) {
    if (!existsSync(join(db, 'manifest.json')))
      throw new Error(`no station database in ${db} (manifest.json missing)`);
  } else checkWritableDb(db);
  for (const f of positionals) if (!existsSync(f)) throw new Error(`no such file: ${f}`);

  let shown = 0;
  const bad = (b: BadLine) => {
    if (shown++ < SHOWN_BAD_LINES) process.stderr.write(`${b.file}: line ${b.line}: ${b.reason} (skipped)\n`);
  };
  const { rows, malformed } = await readCalibrationRows(positionals, { mcc, mnc }, bad);
  if (malformed > SHOWN_BAD_LINES)
    process.stderr.write(
      `... and ${(malformed - SHOWN_BAD_LINES).toLocaleString('en')} more malformed lines\n`,
    );
  const line = new ProgressLine();
  const started = Date.now();
  let c: Awaited<ReturnType<typeof calibrate>>;
  try {
    c = await calibrate(db, rows, {
      dryRun: values['dry-run'],
      now,
      progress: values.quiet
        ? undefined
        : (done, total) => {
            const secs = (Date.now() - started) / 1000;
            line.update({
              label: 'calibrate',
              phase: 'locating',
              done,
              total,
              rows: done,
              etaSeconds: done > 0 && total > done ? (secs * (total - done)) / done : undefined,
            });
          },
    });
  } finally {
    line.done();
  }
  const n = (x: number) => x.toLocaleString('en');
  if (values.json) json(c);
  else
    process.stdout.write(
      `${formatShares(c)}\n` +
        `inside: share of held-out rows within the radius (a place counts at most 20 rows), before (as the ` +
        `database answers now) and after (with the model fitted); factor: the radius multiplier of the class\n`,
    );
  if (!values.quiet)
    process.stderr.write(
      `${n(c.rowsRead)} rows read (${n(malformed)} malformed lines skipped), ${n(c.rowsLocated)} located: ` +
        `fitted on ${n(c.fitRows)}, reported on ${n(c.testRows)} held out (every third block of ${c.block} rows)\n` +
        (c.file ? `radius model stored in ${join(db, c.file)}\n` : 'dry run: nothing stored\n'),
    );
  return 0;
}
