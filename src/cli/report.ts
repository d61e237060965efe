/**
 * What the file-processing commands (`import`, `learn`) show: progress while the core works on
 * a worker thread, then each file's counts and its rejected lines with their reasons.
 */
import type { NativeImportProgress } from '../native/binding.js';
import { ProgressLine } from './progress.js';

/** One input file's outcome, as the core reports it. */
export interface FileOutcome {
  file: string;
  /** The detected format of the file. */
  kind: string;
  rows: number;
  accepted: number;
  rejected: number;
  /** Rows passed over on purpose (not errors), with why in {@link writeFileOutcomes}. */
  skipped?: number;
  badLines: { line: number; reason: string }[];
}

/** A progress callback for the core, and the call that ends the progress display. */
export function progressReporter(quiet: boolean): {
  onProgress: (p: NativeImportProgress) => void;
  done: () => void;
} {
  const line = new ProgressLine();
  return {
    onProgress: (p) => {
      if (!quiet)
        line.update({ label: p.file, done: p.bytesDone, total: p.bytesTotal, rows: p.rows, phase: p.phase });
    },
    done: () => line.done(),
  };
}

/** Writes each file's counts and the first rejected lines (the core keeps up to 20 a file). */
export function writeFileOutcomes(files: readonly FileOutcome[], skippedWhy = 'skipped'): void {
  const n = (x: number) => x.toLocaleString('en');
  for (const f of files) {
    process.stderr.write(
      `${f.file}: ${f.kind}, ${n(f.rows)} rows, ${n(f.accepted)} accepted, ${n(f.rejected)} rejected` +
        (f.skipped ? `, ${n(f.skipped)} ${skippedWhy}` : '') +
        '\n',
    );
    // OSM elements have ids, not lines, and their reasons name them
    for (const b of f.badLines)
      process.stderr.write(f.kind === 'OsmPbf' ? `  ${b.reason}\n` : `  line ${b.line}: ${b.reason}\n`);
    if (f.rejected > f.badLines.length)
      process.stderr.write(`  ... and ${n(f.rejected - f.badLines.length)} more\n`);
  }
}
