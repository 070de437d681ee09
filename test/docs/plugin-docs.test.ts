/** Every registered node type is documented: a page with its config keys and ports, and a row in the table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { registry } from '../../src/plugins/index.js';

const docs = fileURLToPath(new URL('../../docs/plugins/', import.meta.url));
const table = readFileSync(`${docs}README.md`, 'utf8');
const types = [...new Set([...registry.values()].map((d) => d.type))].sort();

for (const type of types) {
  const def = registry.get(type);
  test(`docs: ${type} has a page with Config, Ports, Errors and Example`, () => {
    const path = `${docs}${type}.md`;
    assert.ok(existsSync(path), `missing docs/plugins/${type}.md`);
    const page = readFileSync(path, 'utf8');
    for (const section of ['## Config', '## Ports', '## Errors', '## Example']) {
      assert.ok(page.includes(section), `docs/plugins/${type}.md lacks a "${section}" section`);
    }
    const keys = Object.keys((def?.schema.properties as Record<string, unknown> | undefined) ?? {});
    const undocumented = keys.filter((k) => !page.includes(`\`${k}`));
    assert.deepEqual(undocumented, [], `config keys missing from docs/plugins/${type}.md`);
    const ports = Object.keys(def?.outputs ?? {});
    const missingPorts = ports.filter((p) => !page.includes(`\`${p}\``));
    assert.deepEqual(missingPorts, [], `ports missing from docs/plugins/${type}.md`);
  });
  test(`docs: ${type} has a row in the plugin table`, () => {
    assert.ok(table.includes(`| \`${type}\` |`), `docs/plugins/README.md has no row for ${type}`);
  });
}
