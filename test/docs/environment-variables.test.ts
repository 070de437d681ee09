/**
 * F23 (operator review 3): every variable the shipped config/system.yaml and config/gateway.yaml
 * read is listed, with its default, in docs/environment-variables.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');

/** `${NAME}` / `${NAME:-default}` in the string values of a YAML file (comments are not read). */
function placeholders(path: string): Map<string, string | undefined> {
  const found = new Map<string, string | undefined>();
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      // Innermost first: `${UPSTREAM_PORT:-${GATEWAY_PORT:-8080}}` reads both.
      let text = value;
      for (let m = /\$\{([A-Z0-9_]+)(?::-([^${}]*))?\}/.exec(text); m !== null;) {
        found.set(m[1]!, m[2]);
        text = text.replace(m[0], m[1]!);
        m = /\$\{([A-Z0-9_]+)(?::-([^${}]*))?\}/.exec(text);
      }
    } else if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(visit);
  };
  visit(parse(read(path)));
  return found;
}

const page = read('docs/environment-variables.md');
const rows = new Map(
  [...page.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]),
);

for (const file of ['config/system.yaml', 'config/gateway.yaml']) {
  test(`F23: docs/environment-variables.md lists every variable ${file} reads, with its default`, () => {
    const vars = placeholders(file);
    assert.ok(vars.size > 0, `${file} reads no variable?`);
    for (const [name, fallback] of vars) {
      const row = rows.get(name);
      assert.ok(row !== undefined, `docs/environment-variables.md has no row for ${name} (read by ${file})`);
      if (fallback === undefined || fallback === '') continue;
      assert.ok(
        row.includes(`\`${fallback}\``) || fallback.startsWith(`\${`),
        `the row for ${name} does not give its default ${fallback}: ${row}`,
      );
    }
  });
}
