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
