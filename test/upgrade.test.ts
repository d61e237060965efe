import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine, type UpgradeProgress, upgradeDatabase } from '../src/index.js';
import { root } from './helpers.js';
import { tempDir } from './temp-dirs.js';

/** A copy of the core's fixture: a format 7 database written by that format's build. */
function format7Copy(): string {
  const src = join(root, 'crates/whereabouts-core/tests/fixtures/format7');
  const dir = tempDir('wb-lib-upgrade-');
  for (const f of readdirSync(src).filter((f) => f !== 'README.md'))
    writeFileSync(join(dir, f), readFileSync(join(src, f)));
  return dir;
}

describe('upgradeDatabase', () => {
  it('writes an older database in the current format, with progress, then leaves it alone', async () => {
    const db = format7Copy();
    await expect(Engine.open({ db })).rejects.toThrow(/format version 7.*whereabouts upgrade/);
    const seen: UpgradeProgress[] = [];
    const up = await upgradeDatabase({ db, onProgress: (p) => seen.push(p) });
    expect(up).toMatchObject({ fromFormat: 7, upgraded: true, cells: 13, wifi: 2 });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((p) => p.done <= p.total && p.total === 15)).toBe(true);

    const engine = await Engine.open({ db });
    // eNB 513 sector 1 of the fixture, and its short id (shared with eNB 257's sector 1).
    const lte = (cid: number) => ({ token: 't', radio: 'lte', mcc: 262, mnc: 1, cells: [{ lac: 300, cid }] });
    const full = engine.process(lte((513 << 8) | 1));
    expect(full).toMatchObject({ status: 'ok' });
    expect(full.status === 'ok' && full.lat).toBeCloseTo(52.541, 3);
    engine.close();

    const again = await upgradeDatabase({ db });
    expect(again).toMatchObject({ upgraded: false, shards: 0 });
    expect(again.fromFormat).toBeGreaterThan(7);
  });

  it('rejects a missing directory clearly', async () => {
    await expect(upgradeDatabase({ db: join(tempDir('wb-lib-upgrade-none-'), 'nope') })).rejects.toThrow(
      /nope: no such directory/,
    );
  });
});
