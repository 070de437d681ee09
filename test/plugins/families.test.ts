import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { registry } from '../../src/plugins/index.js';

const pluginsDir = join(import.meta.dirname, '../../src/plugins');
const folders = readdirSync(pluginsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/** The definitions a family folder's index.ts exports (its one array). */
async function familyOf(folder: string): Promise<{ type: string; category: string }[]> {
  const module = (await import(pathToFileURL(join(pluginsDir, folder, 'index.js')).href)) as Record<
    string,
    unknown
  >;
  const lists = Object.values(module).filter(Array.isArray);
  assert.equal(lists.length, 1, `src/plugins/${folder}/index.ts exports one list of node types`);
  return lists[0] as { type: string; category: string }[];
}

test("plugin families: each folder has an index whose node types all carry the folder's name as their editor category", async () => {
  for (const folder of folders) {
    for (const def of await familyOf(folder)) {
      assert.equal(
        def.category,
        folder,
        `${def.type} is in src/plugins/${folder}/ but in category '${def.category}'`,
      );
    }
  }
});

test('plugin families: the family indexes together list every registered node type exactly once', async () => {
  const listed = (await Promise.all(folders.map(familyOf))).flat().map((def) => def.type);
  assert.deepEqual([...listed].sort(), [...registry.keys()].sort());
  assert.equal(new Set(listed).size, listed.length);
});
