import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseYamlData, yamlLibrary } from '../../src/config/yaml-data.js';
import { gatewayReading, yamlReading } from '../support/yaml-readings.js';

/** The review's four texts (security-review.md F-8) and their neighbours. */
const NULL_KEYS = [
  'null: 1\n',
  '~: 1\n',
  ': 1\n',
  '{: 1}\n',
  'Null: 1\nNULL: 2\n',
  '? \n: 1\n',
  '? null\n: 1\n',
  'a: {null: x, b: 1}\n',
  '- null: 1\n',
  '[null: 1]\n',
  '{~}\n',
  'a:\n  ? ~\n',
  'match:\n  headers: {~: v}\nresponse_headers:\n  null: x\n',
  'null: 1\n~: 2\n', // a duplicate key for `yaml` (both are ""): its error, with line and column
];
/** Keys that look null but are not: quoted, or longer words. */
const NOT_NULL_KEYS = ['"null": 1\n', "'~': 1\n", '"": 1\n', 'nullx: 1\n', '~x: 1\n', 'a: null\nb: ~\nc:\n'];

test('F-8: null keys (null:, ~:, :, {: 1}) read exactly as the yaml package reads them', () => {
  for (const text of [...NULL_KEYS, ...NOT_NULL_KEYS])
    assert.deepStrictEqual(gatewayReading(text), yamlReading(text), JSON.stringify(text));
  for (const text of ['null: 1\n', '~: 1\n', ': 1\n', '{: 1}\n'])
    assert.deepStrictEqual(parseYamlData(text), { '': 1 }, JSON.stringify(text));
  assert.deepStrictEqual(yamlLibrary().parse('"null": 1\n'), parseYamlData('"null": 1\n'));
  assert.deepStrictEqual(parseYamlData('"null": 1\n'), { null: 1 });
});

/** A small seeded generator (mulberry32), so a failure names a reproducible document. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['a', 'b', 'c', 'null', '~', 'Null', 'NULL', '', '"null"', "'~'", 'true', '1', 'x y', 'nul'];
const SCALARS = ['1', 'null', '~', '', 'x', '"s"', 'true', '-2.5', "'q'"];

function document(next: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const flow = (depth: number): string => {
    const r = next();
    if (depth > 2 || r < 0.4) return pick(SCALARS.filter((s) => s !== ''));
    const n = 1 + Math.floor(next() * 3);
    if (r < 0.7)
      return `{${Array.from({ length: n }, () => `${pick(KEYS)}: ${flow(depth + 1)}`).join(', ')}}`;
    return `[${Array.from({ length: n }, () => flow(depth + 1)).join(', ')}]`;
  };
  const block = (depth: number, indent: string): string => {
    const n = 1 + Math.floor(next() * 3);
    let out = '';
    for (let i = 0; i < n; i++) {
      const key = pick(KEYS);
      const r = next();
      if (depth < 3 && r < 0.3) out += `${indent}${key}:\n${block(depth + 1, `${indent}  `)}`;
      else if (depth < 3 && r < 0.45) out += `${indent}${key}:\n${indent}  - ${flow(depth + 1)}\n`;
      else if (r < 0.7) out += `${indent}${key}: ${flow(depth + 1)}\n`;
      else out += `${indent}${key}: ${pick(SCALARS)}\n`.replace(/ \n$/, '\n');
    }
    return out;
  };
  return next() < 0.2 ? `${flow(0)}\n` : block(0, '');
}

test('F-8: generated documents with and without null keys read exactly as the yaml package reads them', () => {
  const next = random(0x5eed8);
  let withNullKey = 0;
  for (let i = 0; i < 3000; i++) {
    const text = document(next);
    if (/(^|[{,]\s*|\n\s*)(null|Null|NULL|~|)\s*:/.test(text)) withNullKey++;
    assert.deepStrictEqual(gatewayReading(text), yamlReading(text), `document ${i}: ${JSON.stringify(text)}`);
  }
  assert.ok(withNullKey > 300, `only ${withNullKey} of 3000 documents have a null key`);
});
