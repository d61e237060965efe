/**
 * Command-line parsing shared by the commands: strict flags, clear usage errors.
 */
import { parseArgs } from 'node:util';

/** A mistake in how the command was called (exit code 2). */
export class UsageError extends Error {}

type FlagOptions = NonNullable<NonNullable<Parameters<typeof parseArgs>[0]>['options']>;
type Parsed<T extends FlagOptions> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
>;

/** parseArgs with unknown flags and bad values reported as {@link UsageError}. */
export function parseFlags<T extends FlagOptions>(argv: string[], options: T): Parsed<T> {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * `--mcc N --mnc N` of the commands that read observation files: both or neither, each an
 * integer in its range (mcc 0..999, mnc 0..32767).
 */
export function networkFlags(values: { mcc?: string | undefined; mnc?: string | undefined }): {
  mcc: number | undefined;
  mnc: number | undefined;
} {
  const code = (name: string, text: string | undefined, max: number) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0 || n > max)
      throw new UsageError(`--${name} must be an integer 0..${max}`);
    return n;
  };
  const mcc = code('mcc', values.mcc, 999);
  const mnc = code('mnc', values.mnc, 32767);
  if ((mcc === undefined) !== (mnc === undefined)) throw new UsageError('give --mcc and --mnc together');
  return { mcc, mnc };
}
