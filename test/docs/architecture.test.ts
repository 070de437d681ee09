import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../support/temp-dir.js';

const script = join(import.meta.dirname, '../../scripts/check-layers.mjs');

/** Runs the layering check over a tree made of `files` (path → text), with `layers` as the doc's table rows. */
function checkTree(
  layers: string[],
  files: Record<string, string>,
): { status: number | null; output: string } {
  const dir = tempDir('switchyard-layers-');
  try {
    const doc = [
      '# Architecture',
      '<!-- layers:begin -->',
      '| # | Layer | Units | Owns |',
      '|---|---|---|---|',
    ];
    doc.push(...layers, '<!-- layers:end -->', '');
    const all: Record<string, string> = { 'docs/architecture.md': doc.join('\n'), ...files };
    for (const [path, text] of Object.entries(all)) {
      mkdirSync(dirname(join(dir.path, path)), { recursive: true });
      writeFileSync(join(dir.path, path), text);
    }
    const run = spawnSync(process.execPath, [script, '--root', dir.path], { encoding: 'utf8' });
    return { status: run.status, output: run.stdout + run.stderr };
  } finally {
    dir.remove();
  }
}

const LAYERS = [
  '| 1 | core | `core/` | words |',
  '| 2 | engine | `engine/` | runs |',
  '| 3 | cli | `cli.ts` | starts |',
];

test('layers: imports that only point down pass the check', () => {
  const { status, output } = checkTree(LAYERS, {
    'src/core/context.ts': 'export interface Context { id: string }\n',
    'src/engine/run.ts':
      "import type { Context } from '../core/context.js';\nexport const run = (c: Context) => c.id;\n",
    'src/cli.ts': "import { run } from './engine/run.js';\nrun({ id: 'x' });\n",
  });
  assert.equal(status, 0, output);
  assert.match(output, /3 layers, 2 folder arrows, none upward, no cycles/);
});

test('layers: an upward import fails the check and names the importing and imported files', () => {
  const { status, output } = checkTree(LAYERS, {
    'src/core/context.ts':
      "import type { Runner } from '../engine/run.js';\nexport interface Context { run: Runner }\n",
    'src/engine/run.ts': 'export type Runner = () => void;\n',
  });
  assert.equal(status, 1);
  assert.match(output, /upward import: src\/core\/context\.ts imports src\/engine\/run\.ts \(layer 1 -> 2\)/);
});

test('layers: folders that import each other fail as a folder cycle, even within one layer', () => {
  const { status, output } = checkTree(['| 1 | core | `core/` `util/` | words |'], {
    'src/core/a.ts': "import { b } from '../util/b.js';\nexport const a = b;\n",
    'src/util/b.ts': 'export const b = 1;\n',
    'src/util/c.ts': "import { a } from '../core/a.js';\nexport const c = a;\n",
  });
  assert.equal(status, 1);
  assert.match(output, /folder cycle: src\/core, src\/util/);
  assert.doesNotMatch(output, /file cycle/);
});

test('layers: two files that import each other fail as a file cycle, type-only imports included', () => {
  const { status, output } = checkTree(LAYERS, {
    'src/engine/a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
    'src/engine/b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
  });
  assert.equal(status, 1);
  assert.match(output, /file cycle: src\/engine\/a\.ts, src\/engine\/b\.ts/);
});

test('layers: a folder of src/ missing from the table fails until it is given a layer', () => {
  const { status, output } = checkTree(LAYERS, { 'src/extra/x.ts': 'export const x = 1;\n' });
  assert.equal(status, 1);
  assert.match(output, /src\/extra has no layer in docs\/architecture\.md/);
});

test('layers: an import written in a comment draws no arrow', () => {
  const { status, output } = checkTree(LAYERS, {
    'src/core/context.ts': "// import { run } from '../engine/run.js';\nexport const id = 1;\n",
    'src/engine/run.ts': 'export const run = 1;\n',
  });
  assert.equal(status, 0, output);
});
