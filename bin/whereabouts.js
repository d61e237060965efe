#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

// A reader that stops early (`whereabouts stats --db DIR | head`) closes the pipe: stop
// quietly, as Unix tools do, rather than die on the write with a stack trace.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`whereabouts: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
