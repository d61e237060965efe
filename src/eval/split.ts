/**
 * How observation rows are split between learning and testing (`--split`):
 * - `files`: the files sorted by path, every fourth (index % 4 == 3) tested, the rest learned;
 *   with fewer than four files, the last one is tested.
 * - `time`: the rows ordered by time (then file and line); the last quarter tested, the rest
 *   learned. Rows without a time are learned only.
 * - `kfold:K`: the rows in that order (rows without a time last, by file and line) cut into K
 *   blocks of equal count; each block is tested against a database learned from the others.
 * A row is a group of observations taken at one moment ({@link ObservationGroup}); its lines are
 * what learning holds out.
 */
import type { ObservationGroup } from './inputs.js';

export type Split = { kind: 'files' } | { kind: 'time' } | { kind: 'kfold'; k: number };

/** Parses `files`, `time` or `kfold:K` (K from 2 to 100). */
export function parseSplit(text: string): Split {
  if (text === 'files' || text === 'time') return { kind: text };
  const m = /^kfold:(\d+)$/.exec(text);
  const k = m ? Number(m[1]) : Number.NaN;
  if (!(k >= 2 && k <= 100))
    throw new Error(`--split must be files, time or kfold:K with K from 2 to 100 (got "${text}")`);
  return { kind: 'kfold', k };
}

/** Which fold tests each group (-1: learned in every fold, tested in none), and how many folds. */
export interface Folds {
  fold: Int32Array;
  count: number;
}

/** Assigns the groups (in file order, as {@link groupObservations} gives them) to folds. */
export function assignFolds(groups: readonly ObservationGroup[], files: number, split: Split): Folds {
  const fold = new Int32Array(groups.length).fill(-1);
  if (split.kind === 'files') {
    const tested = (f: number) => (files < 4 ? f === files - 1 : f % 4 === 3);
    groups.forEach((g, i) => {
      if (tested(g.file)) fold[i] = 0;
    });
    return { fold, count: 1 };
  }
  // Group order is file order, then line order within a file: a stable sort by time keeps it.
  const order = groups.map((_, i) => i);
  const t = (i: number) => groups[i]?.time as number;
  order.sort((a, b) => {
    const ta = t(a);
    const tb = t(b);
    if (Number.isNaN(ta) || Number.isNaN(tb))
      return Number(Number.isNaN(ta)) - Number(Number.isNaN(tb)) || a - b;
    return ta - tb || a - b;
  });
  if (split.kind === 'time') {
    const timed = order.filter((i) => !Number.isNaN(t(i)));
    const tested = Math.ceil(timed.length / 4);
    for (const i of timed.slice(timed.length - tested)) fold[i] = 0;
    return { fold, count: 1 };
  }
  const n = order.length;
  order.forEach((g, rank) => {
    fold[g] = Math.floor((rank * split.k) / n);
  });
  return { fold, count: split.k };
}

/** What fold `k` learns: the files with rows on the learning side, and per file the lines held out. */
export interface LearnPlan {
  files: number[];
  heldOut: number[][];
}

/**
 * The learning side of fold `k`: every file with at least one row not tested in `k`, and in
 * each the sorted lines of its rows that `k` tests (so they are never learned).
 */
export function learnPlan(
  groups: readonly ObservationGroup[],
  lines: readonly Float64Array[],
  folds: Folds,
  k: number,
): LearnPlan {
  const learned = new Set<number>();
  const held = new Map<number, number[]>();
  groups.forEach((g, i) => {
    if (folds.fold[i] === k) {
      const h = held.get(g.file) ?? [];
      const col = lines[g.file] as Float64Array;
      for (let r = g.first; r < g.end; r++) h.push(col[r] as number);
      held.set(g.file, h);
    } else learned.add(g.file);
  });
  const files = [...learned].sort((a, b) => a - b);
  return { files, heldOut: files.map((f) => (held.get(f) ?? []).sort((a, b) => a - b)) };
}
