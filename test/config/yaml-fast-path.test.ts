import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import * as jsYaml from 'js-yaml';
import { parse } from 'yaml';
import { scaleConfigYaml } from '../../bench/config-scale-config.js';
import { gatewayReading, yamlReading } from '../support/yaml-readings.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { OFF_THREAD_CHUNK_ITEMS, parseGatewayConfigOffThread } from '../../src/config/parse-off-thread.js';
import { countTurns } from '../support/event-loop-turns.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseYamlData, parseYamlFast } from '../../src/config/yaml-data.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every YAML text of the repository: tracked .yaml/.yml files, ```yaml blocks of the docs, static YAML literals of the tests. */
function corpus(): { name: string; text: string; configFile: boolean }[] {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((path) => path !== '');
  const texts: { name: string; text: string; configFile: boolean }[] = [];
  for (const path of tracked.filter((p) => /\.ya?ml$/.test(p))) {
    const configFile = /^(config|examples)\//.test(path);
    texts.push({ name: path, text: readFileSync(join(root, path), 'utf8'), configFile });
  }
  for (const path of tracked.filter((p) => /\.md$/.test(p) && !p.startsWith('node_modules/'))) {
    const markdown = readFileSync(join(root, path), 'utf8');
    let n = 0;
    for (const m of markdown.matchAll(/```ya?ml\n([\s\S]*?)```/g)) {
      texts.push({ name: `${path} yaml block ${++n}`, text: m[1]!, configFile: false });
    }
  }
  for (const path of tracked.filter((p) => /^test\/.*\.ts$/.test(p))) {
    const source = readFileSync(join(root, path), 'utf8');
    let n = 0;
    // Template literals without placeholders that read like gateway or system YAML.
    for (const m of source.matchAll(/`([^`$\\]*\n[^`$\\]*)`/g)) {
      if (
        !/^\s*(routes|policies|listener|admin|logging|plugin_configs|supernodes|consumers|stores):/m.test(
          m[1]!,
        )
      )
        continue;
      texts.push({ name: `${path} literal ${++n}`, text: m[1]!, configFile: false });
    }
  }
  return texts;
}

test('YAML fast path: every YAML text of the repository (config/, examples/, docs, test fixtures) reads exactly as the yaml package reads it', () => {
  const texts = corpus();
  assert.ok(texts.length > 200, `only ${texts.length} YAML texts found`);
  let fast = 0;
  let configFiles = 0;
  let configFast = 0;
  for (const { name, text, configFile } of texts) {
    const expected = yamlReading(text);
    const actual = gatewayReading(text);
    assert.ok(isDeepStrictEqual(actual, expected), `${name}: the fast path reads it differently`);
    const taken = parseYamlFast(jsYaml, text) !== undefined;
    if (taken) {
      fast++;
      // The fast path's own value, not only parseYamlData's (which could have fallen back).
      assert.ok(
        'value' in expected && isDeepStrictEqual(parseYamlFast(jsYaml, text)?.value, expected.value),
        name,
      );
    }
    if (configFile) {
      configFiles++;
      if (taken) configFast++;
    }
  }
  // The fast path must actually be the one that runs for ordinary config files.
  assert.ok(configFast >= configFiles * 0.9, `fast path took ${configFast} of ${configFiles} config files`);
  assert.ok(fast >= texts.length * 0.5, `fast path took ${fast} of ${texts.length} texts`);
});

/** Texts where YAML libraries tend to differ; each must read as `yaml` reads it. */
const EDGE_CASES: Record<string, string> = {
  'merge key stays an ordinary key': 'base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n',
  'literal << key': '<<: {a: 1}\nb: 2\n',
  'yes/no/on/off are strings': 'a: yes\nb: no\nc: on\nd: off\ne: y\nf: True\ng: NULL\nh: ~\ni:\n',
  numbers:
    'big: 12345678901234567890\nn: 9007199254740993\nneg: -0\nf: 1.0\noct: 010\no: 0o17\nh: 0x1F\np: +12\nu: 1_000\ninf: .inf\nninf: -.Inf\nnan: .NaN\ne: 1e3\nd: .5\nx: 1.\n',
  'numbers beyond a double': `a: 9e999\nb: -2e308\nc: ${'9'.repeat(400)}\nd: 1e-400\nsha: 3e4510aa\n`,
  'duplicate keys are refused': 'a: 1\na: 2\n',
  'duplicate scalar keys of different forms': '1: a\n"1": b\n',
  'empty text': '',
  'only a comment': '# nothing\n',
  'two documents': '---\na: 1\n---\nb: 2\n',
  'a %YAML 1.1 directive': '%YAML 1.1\n---\na: yes\n',
  'collection keys': '[a, b]: 1\n',
  'explicit tags': 's: !!str 12\ni: !!int "12"\nf: !!float 1\nb: !!binary aGVsbG8=\nc: !custom foo\n',
  'anchors and aliases': 'k: &a [1, 2]\nm: *a\n',
  'an unknown alias': 'x: &anc\n  y: 1\nz: *nope\n',
  'many aliases': `a: &x [1]\nl: [${Array.from({ length: 120 }, () => '*x').join(', ')}]\n`,
  'a 1,100-character key': `${'k'.repeat(1100)}: v\n`,
  'a long key in a flow mapping': `{${'k'.repeat(1100)}: v}\n`,
  'proto key': '__proto__: {x: 1}\ny: 2\n',
  'escapes and quoting': 'q: "a\\x41\\u00e9\\/\\N\\e\\_"\nsq: \'it\'\'s\'\nk: "x\n\n  y"\n',
  'block scalars': 'f: >\n  folded\n  text\n\n  para\nl: |+\n  keep\n\nm: |2\n   x\n',
  'CRLF and BOM': '\ufeffa: 1\r\nb: [x, y]\r\n',
  'tab indentation': 'a:\n\t- b\n',
  'timestamps are strings': 'ts: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\n',
  'deep nesting': `${'['.repeat(150)}1${']'.repeat(150)}\n`,
};

test('YAML fast path: merge keys, yes/no, large numbers, duplicate keys, tags, aliases and other edge cases read as the yaml package reads them', () => {
  for (const [name, text] of Object.entries(EDGE_CASES)) {
    assert.deepStrictEqual(gatewayReading(text), yamlReading(text), name);
  }
  // What those semantics are, spelled out.
  assert.deepEqual(parseYamlData('a: yes\nb: no'), { a: 'yes', b: 'no' });
  assert.deepEqual(parseYamlData('base: &b {x: 1}\nuse:\n  <<: *b\n'), {
    base: { x: 1 },
    use: { '<<': { x: 1 } },
  });
  assert.equal((parseYamlData('n: 12345678901234567890') as { n: number }).n, Number('12345678901234567890'));
  assert.equal(parseYamlData(''), null);
  assert.throws(() => parseYamlData('a: 1\na: 2\n'), /Map keys must be unique at line 2, column 1/);
});

test('a gateway.yaml with a duplicate key is refused with its line and column, as before', () => {
  const text = 'routes:\n  - name: a\n    match: {path: /a}\n    policy: p\n    policy: q\n';
  assert.throws(
    () => parseGatewayConfig(text),
    (err: unknown) =>
      err instanceof ConfigRejected && err.issues.some((i) => i.line === 5 && /unique/.test(i.message)),
  );
});

test('a large gateway.yaml parsed off the main thread reads the same as on it, in block and flow style', async () => {
  const flow = scaleConfigYaml(700, { upstreamPort: 9 });
  assert.ok(flow.length > 256 * 1024);
  const block = jsYaml.dump(parse(flow), { lineWidth: -1 });
  for (const text of [flow, block]) {
    const onThread = parseGatewayConfig(text);
    // The document comes back in pieces, one per event-loop turn: requests keep being served.
    let turns = 0;
    const loop = countTurns();
    const offThread = await parseGatewayConfigOffThread(text).finally(() => (turns = loop.stop()));
    assert.deepStrictEqual(offThread, onThread);
    assert.ok(turns >= (2 * 700) / OFF_THREAD_CHUNK_ITEMS, `only ${turns} event-loop turns during the parse`);
    assert.deepStrictEqual(onThread, parseGatewayConfig(JSON.stringify(parse(text))));
  }
  const broken = `${flow}\n  - name: x\n    name: y\n`;
  await assert.rejects(parseGatewayConfigOffThread(broken), (err: unknown) => {
    const issue = err instanceof ConfigRejected ? err.issues[0] : undefined;
    return issue !== undefined && /unique/.test(issue.message) && issue.line !== undefined;
  });
});
