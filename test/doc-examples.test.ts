/**
 * Every `@example` in the public API's doc comments (src/) runs as written, against the embedded
 * demo data, and prints what its `// prints:` comments say: the examples cannot drift from the
 * API or its answers. Each runs as its own module with `'whereabouts'` resolved to src/index.ts
 * (and a subpath `'whereabouts/NAME'` to src/NAME/index.ts)
 * and `'./stations'` to a fresh copy of the demo database (data/demo-db), so that the examples
 * that learn and compact write to a copy. Every `console.log` of an example needs a `// prints:`
 * comment on its line; output is compared with runs of whitespace taken as one space.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { formatWithOptions } from 'node:util';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.js';
import { tempDir } from './temp-dirs.js';

interface Example {
  name: string;
  code: string;
  expected: string[];
}

const EXAMPLE = /@example\n\s*\* ```ts\n([\s\S]*?)\n\s*\* ```/g;
const PRINTS = /\/\/ prints: (.*)$/;

function examples(): Example[] {
  const src = join(root, 'src');
  const found: Example[] = [];
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files.sort()) {
    const text = readFileSync(join(src, file), 'utf8');
    for (const m of text.matchAll(EXAMPLE)) {
      const code = (m[1] as string)
        .split('\n')
        .map((l) => l.replace(/^\s*\* ?/, ''))
        .join('\n');
      const line = text.slice(0, m.index).split('\n').length;
      const expected = code.split('\n').flatMap((l) => {
        const p = PRINTS.exec(l);
        return p ? [p[1] as string] : [];
      });
      found.push({ name: `${relative(root, join(src, file))}:${line}`, code, expected });
    }
  }
  return found;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** What the example's `console.log` calls printed, each call one string. */
declare global {
  var __exampleLog: ((...args: unknown[]) => void) | undefined;
}

const all = examples();

describe('doc comment examples', () => {
  it('finds the examples of the public API', () => {
    // Engine (class, open, process, processBatch, locate, timezone, reverse, search, learn,
    // compact) and the exported helpers (parseRequest, parseRequestText, describeZone,
    // preferredLanguages, parseAddressQuery).
    expect(all.length).toBeGreaterThanOrEqual(15);
  });

  for (const ex of all) {
    it(`${ex.name} runs and prints what it says`, async () => {
      const lines = ex.code.split('\n');
      const logs = lines.filter((l) => l.includes('console.log(')).length;
      expect(logs, 'every console.log has a // prints: comment').toBe(ex.expected.length);
      const dir = tempDir('wb-example-');
      const stations = join(dir, 'stations');
      cpSync(join(root, 'data', 'demo-db'), stations, { recursive: true });
      const code = ex.code
        .replaceAll("from 'whereabouts'", `from ${JSON.stringify(join(root, 'src', 'index.ts'))}`)
        .replace(
          /from 'whereabouts\/([a-z]+)'/g,
          (_m, sub: string) => `from ${JSON.stringify(join(root, 'src', sub, 'index.ts'))}`,
        )
        .replaceAll("'./stations'", JSON.stringify(stations))
        .replaceAll('console.log(', 'globalThis.__exampleLog?.(');
      const file = join(dir, 'example.ts');
      writeFileSync(file, `${code}\nexport {};\n`);
      const printed: string[] = [];
      globalThis.__exampleLog = (...args) => printed.push(formatWithOptions({ colors: false }, ...args));
      try {
        await import(file);
      } finally {
        globalThis.__exampleLog = undefined;
      }
      expect(printed.map(oneLine)).toEqual(ex.expected.map(oneLine));
    });
  }
});
