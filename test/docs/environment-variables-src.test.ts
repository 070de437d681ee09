/**
 * Issue 35 item 3 (OTEL_* variables) and every other variable the sources read: each has a row in
 * docs/environment-variables.md. The sources are read as text, comments dropped: `process.env.X`,
 * `env.X`, `env['X']`, `env[CONST]` with `const CONST = 'X'` in the same file, and templates such
 * as `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`, which need a documented row for some value of the
 * part in `${}`. The OTEL_* variables docs/opentelemetry.md names (the SDK reads them for the
 * gateway) need a row too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Block comments, and line comments that start a line or follow whitespace (not `://`). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
}

const NAME = '[A-Z][A-Z0-9_]*';

/** What one file reads: names, and templates as [prefix, suffix]. */
function readsOf(text: string): { names: Set<string>; templates: [string, string][] } {
  const code = withoutComments(text);
  const names = new Set<string>();
  // `{{env.NAME}}` is the template language (a config's reference), not a read by the sources.
  for (const m of code.matchAll(new RegExp(`(?<!\\{\\{\\s*)\\benv\\.(${NAME})\\b`, 'g'))) names.add(m[1]!);
  for (const m of code.matchAll(new RegExp(`\\benv\\[\\s*['"](${NAME})['"]\\s*\\]`, 'g'))) names.add(m[1]!);
  const constants = new Map(
    [...code.matchAll(new RegExp(`\\bconst (${NAME}) = ['"](${NAME})['"]`, 'g'))].map((m) => [m[1]!, m[2]!]),
  );
  for (const m of code.matchAll(new RegExp(`\\benv\\[\\s*(${NAME})\\s*\\]`, 'g'))) {
    const value = constants.get(m[1]!);
    assert.ok(value !== undefined, `env[${m[1]}]: no string constant ${m[1]} in the same file`);
    names.add(value);
  }
  const templates: [string, string][] = [];
  for (const m of code.matchAll(/`(OTEL_[A-Z0-9_]*)\$\{[^}`]*\}([A-Z0-9_]*)`/g))
    templates.push([m[1]!, m[2]!]);
  return { names, templates };
}

const page = read('docs/environment-variables.md');
const documented = new Set([...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!));

test('issue 35: docs/environment-variables.md has a row for every environment variable src/ reads', () => {
  const missing: string[] = [];
  let seen = 0;
  for (const file of sources('src')) {
    const { names, templates } = readsOf(read(file));
    for (const name of names) {
      seen++;
      if (!documented.has(name)) missing.push(`${name} (${relative(ROOT, join(ROOT, file))})`);
    }
    for (const [prefix, suffix] of templates) {
      seen++;
      const pattern = new RegExp(`^${prefix}[A-Z0-9]+${suffix}$`);
      if (![...documented].some((row) => pattern.test(row))) missing.push(`${prefix}<…>${suffix} (${file})`);
    }
  }
  assert.ok(seen > 20, `only ${seen} reads found: the scan is broken`);
  assert.deepEqual(missing, [], 'undocumented environment variables');
});

test('issue 35: the OTEL_* variables docs/opentelemetry.md names have rows there too', () => {
  const named = new Set(
    [...read('docs/opentelemetry.md').matchAll(/`(OTEL_[A-Z0-9_]*[A-Z0-9])`/g)].map((m) => m[1]!),
  );
  assert.ok(named.size >= 8);
  assert.deepEqual(
    [...named].filter((name) => !documented.has(name)),
    [],
  );
});

test('issue 35: the scan finds a read in each of its forms', () => {
  const { names, templates } = readsOf(
    [
      "const A_ENV = 'FROM_CONSTANT';",
      'x = process.env.DOTTED; y = env["QUOTED"]; z = env[A_ENV];',
      '// env.IN_A_COMMENT',
      '/** {{env.IN_DOCS}} */ const t = "{{env.TEMPLATE_REF}}";',
      'const n = `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`;',
    ].join('\n'),
  );
  assert.deepEqual([...names].sort(), ['DOTTED', 'FROM_CONSTANT', 'QUOTED']);
  assert.deepEqual(templates, [['OTEL_EXPORTER_OTLP_', '_PROTOCOL']]);
});
