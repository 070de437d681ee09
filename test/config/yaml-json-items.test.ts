import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import * as jsYaml from 'js-yaml';
import { scaleConfigYaml } from '../../bench/config-scale-config.js';
import { gatewayReading, yamlReading } from '../support/yaml-readings.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import {
  OFF_THREAD_PARSE_BYTES,
  OFF_THREAD_SHAPE_CHECK,
  parseGatewayConfigOffThread,
} from '../../src/config/parse-off-thread.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseYamlData, parseYamlEvents, putJsonItems, takeJsonItems } from '../../src/config/yaml-data.js';

/** Whether the JSON-items path alone read `text` (rather than handing it to js-yaml or `yaml`). */
function readAsJsonItems(text: string): boolean {
  const json = takeJsonItems(text);
  if (json === undefined) return false;
  const outline = parseYamlEvents(jsYaml, json.outline);
  return outline !== undefined && putJsonItems(outline.value, json.mark, json.runs);
}

const item = (value: unknown) => `  - ${JSON.stringify(value)}`;

/** Texts the JSON-items path reads itself; each must read exactly as `yaml` reads it. */
const TAKEN: Record<string, string> = {
  'routes and policies, one JSON line each': [
    'routes:',
    item({ name: 'a', match: { path: '/a', methods: ['GET'] }, policy: 'p' }),
    item({ name: 'b', match: { path: '/b/*', host: 'b.example.test' }, policy: 'p' }),
    'policies:',
    item({ name: 'p', nodes: [{ id: 'listener', type: 'listener' }], edges: [] }),
    '',
  ].join('\n'),
  'items mixed with block items, comments and blank lines': [
    '# generated',
    'routes:',
    item({ name: 'a', match: { path: '/a' }, policy: 'p' }),
    '  - name: b',
    '    match: {path: /b}',
    '    policy: p',
    item({ name: 'c', match: { path: '/c' }, policy: 'p' }),
    '',
    item({ name: 'd', match: { path: '/d' }, policy: 'p' }),
    '  # a comment between items',
    item({ name: 'e', match: { path: '/e' }, policy: 'p' }),
    'policies: []',
    '',
  ].join('\n'),
  'CRLF line ends': `routes:\r\n${item({ a: 1 })}\r\n${item({ b: 2 })}\r\nx: 1\r\n`,
  'items at column 0 and nested sequences': `a:\n- {"x": 1}\n- {"y": [1, [2, {"z": []}]]}\nb:\n  - - 1\n    - {"q": 2}\n    - {"r": 3}\n`,
  'numbers as both read them': `- {"big": 12345678901234567890, "f": 1.5e3, "e": 1e-7}\n- {"neg": -0, "inf": 1e400, "one": 1.0, "E": 1E5, "p": 1e+2}\n`,
  'escapes and non-ASCII': `- {"s": "a\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 é 😀 \u007f", "k\\"ey": "{\\"error\\": \\"{{error.code}}\\"}"}\n`,
  'empty collections and scalars': '- {}\n- []\n- {"a": null, "b": true, "c": false, "d": "", "e": {}}\n',
  'spaces around colons and commas': '- { "a" : 1 ,  "b":2 , "c" :[ 1 , 2 ] }\n',
  'a trailing comment stays with js-yaml, its neighbours do not': '- {"a": 1} # note\n- {"b": 2}\n',
  'the generated 300-route configuration': scaleConfigYaml(300, { upstreamPort: 9 }),
};

/** Texts with JSON-looking lines the path must leave to js-yaml or `yaml`; each reads as `yaml` reads it. */
const LEFT: Record<string, string> = {
  'a duplicate key inside an item': 'routes:\n  - {"name": "a", "policy": "p", "name": "b"}\n',
  'a duplicate key in a nested object': '- {"a": {"x": 1, "y": 2, "x": 3}}\n',
  'a duplicate key beside a quoted colon': '- {"a": 1, "a": "x\\":"}\n',
  'a key over 1,000 characters': `- {"${'k'.repeat(1100)}": 1}\n`,
  'a __proto__ key': '- {"__proto__": {"x": 1}, "y": 2}\n',
  'a tab between tokens': '- {"a":\t1}\n',
  'inside a literal block scalar': 'd: |\n  - {"a": 1}\n  - {"b": 2}\nx: 1\n',
  'inside a folded block scalar': 'd: >\n  - {"a": 1}\n',
  'inside a multi-line plain scalar': 'd: text\n  - {"a": 1}\n',
  'inside a multi-line double-quoted scalar': 'd: "x\n  - {\\"a\\": 1}\n  "\n',
  'inside a flow sequence over several lines': 'd: [\n  - {"a": 1}\n]\n',
  'followed by a more indented line': '- {"a": 1}\n  b: 2\n',
  'an alias elsewhere in the document': 'x: &a 1\ny: *a\nz:\n  - {"a": 1}\n',
  'a tag on the sequence': 'z: !!seq\n  - {"a": 1}\n',
  'the mark itself in the text': 'note: __json_items_0\nz:\n  - {"a": 1}\n',
  'not JSON: single quotes, bare words, a trailing comma': '- {\'a\': 1}\n- {a: 1}\n- {"a": 1,}\n',
  'a syntax error elsewhere': 'a: [\nroutes:\n  - {"a": 1}\n',
};

test('YAML with one-line JSON items reads exactly as the yaml package reads it, and the JSON path takes it', () => {
  for (const [name, text] of Object.entries(TAKEN)) {
    assert.deepStrictEqual(gatewayReading(text), yamlReading(text), name);
    assert.ok(readAsJsonItems(text), `${name}: the JSON-items path did not take it`);
  }
  // -0 stays -0, as `yaml` reads it (deepStrictEqual tells them apart).
  assert.ok(Object.is((parseYamlData('- {"n": -0}') as [{ n: number }])[0].n, -0));
});

test('JSON-looking lines the JSON path cannot vouch for are read as before, errors included', () => {
  for (const [name, text] of Object.entries(LEFT)) {
    assert.deepStrictEqual(gatewayReading(text), yamlReading(text), name);
    const value = yamlReading(text);
    if ('value' in value && readAsJsonItems(text)) {
      assert.fail(`${name}: the JSON-items path took a text it must leave`);
    }
  }
});

test('a duplicate key in a JSON route line is refused with its line, as a block-style one is', () => {
  const text = `routes:\n${item({ name: 'a', match: { path: '/a' }, policy: 'p' })}\n  - {"name": "b", "match": {"path": "/b"}, "policy": "p", "policy": "q"}\npolicies: []\n`;
  assert.throws(
    () => parseGatewayConfig(text),
    (err: unknown) =>
      err instanceof ConfigRejected && err.issues.some((i) => i.line === 3 && /unique/.test(i.message)),
  );
});

test('a large generated configuration reads the same through the JSON path as through js-yaml alone', () => {
  const text = scaleConfigYaml(2000, { upstreamPort: 9 });
  const whole = parseYamlEvents(jsYaml, text);
  assert.ok(whole !== undefined);
  assert.ok(isDeepStrictEqual(parseYamlData(text), whole.value));
  // The outline js-yaml still reads is one line per run, not one per item.
  const json = takeJsonItems(text);
  assert.ok(json !== undefined && json.runs.length === 2 && json.outline.length < 100, json?.outline);
});

test('a large gateway.yaml with shape errors is refused with the same issues off the main thread as on it', async () => {
  const valid = scaleConfigYaml(700, { upstreamPort: 9 });
  assert.ok(valid.length > OFF_THREAD_PARSE_BYTES);
  // Compiled, as the gateway runs, the worker checks the shape itself.
  assert.equal(OFF_THREAD_SHAPE_CHECK, import.meta.url.endsWith('.js'));
  // An unknown key in a JSON route line, a block-style policy without a name, a wrong top-level type.
  const text = valid
    .replace('{"name":"r5",', '{"name":"r5","colour":"red",')
    .replace('policies:\n', 'policies:\n  - nodes: []\n')
    .concat('stores: {}\n');
  const issuesOf = async (read: () => unknown) => {
    try {
      await read();
    } catch (err) {
      assert.ok(err instanceof ConfigRejected, String(err));
      return err.issues;
    }
    return assert.fail('the configuration was accepted');
  };
  const onThread = await issuesOf(() => parseGatewayConfig(text));
  assert.deepStrictEqual(await issuesOf(() => parseGatewayConfigOffThread(text)), onThread);
  assert.deepStrictEqual(
    onThread.map((i) => i.path),
    ['routes[5].colour', 'policies[0].name', 'stores'],
  );
  // Defaults the shape check fills in arrive too.
  assert.deepStrictEqual(await parseGatewayConfigOffThread(valid), parseGatewayConfig(valid));
});
