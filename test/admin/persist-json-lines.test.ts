import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { scaleConfigYaml } from '../../bench/config-scale-config.js';
import { checkGatewayShape, parseGatewayConfig, type GatewayConfig } from '../../src/config/gateway.js';
import { renderGatewayYaml } from '../../src/config/persist.js';

const reparse = (text: string): GatewayConfig => checkGatewayShape(parse(text) ?? {});

/** The lines of `after` that are not in `before`, and those of `before` gone from `after`. */
function lineChanges(before: string, after: string): { added: string[]; removed: string[] } {
  const old = new Set(before.split('\n'));
  const now = new Set(after.split('\n'));
  return {
    added: [...now].filter((line) => !old.has(line)),
    removed: [...old].filter((line) => !now.has(line)),
  };
}

/** A generated file: a comment, one-line JSON items, an empty section. */
const generated = (count: number) =>
  `# generated: do not edit by hand\n${scaleConfigYaml(count, { upstreamPort: 9 })}stores: []\n`;

test('persist: in a file of one-line JSON items only the changed items change lines', () => {
  const text = generated(40);
  const next = parseGatewayConfig(text);
  next.policies[2] = parseGatewayConfig(scaleConfigYaml(3, { upstreamPort: 9, version: 'v2' })).policies[2]!;
  next.routes.splice(1, 1);
  next.routes.push({ name: 'extra', match: { path: '/extra' }, policy: 'p0' });
  const written = renderGatewayYaml(text, next);
  assert.deepEqual(reparse(written), checkGatewayShape(structuredClone(next)));
  const { added, removed } = lineChanges(text, written);
  const nameOf = (line: string) => (JSON.parse(line.slice(4)) as { name: string }).name;
  assert.deepEqual(
    removed.map(nameOf),
    ['r1', 'p2'],
    'the removed route and the old form of the changed policy',
  );
  // Routes come first in the file: the new route, then the new form of the policy.
  assert.deepEqual(added.map(nameOf), ['extra', 'p2']);
  assert.match(added[1]!, /^ {2}- \{"name":"p2",.*"v2 p2 /);
  assert.ok(written.startsWith('# generated: do not edit by hand\n'));
  assert.ok(written.endsWith('stores: []\n'));
});

test('persist: a JSON-items file with a new section, a comment among items or CRLF lines is merged the full way, correctly', () => {
  const base = generated(6);
  const withComment = base.replace('  - {"name":"r2"', '  # the third route\n  - {"name":"r2"');
  const crlf = base.replace(/\n/g, '\r\n');
  for (const [label, text] of [
    ['plain', base],
    ['comment', withComment],
    ['crlf', crlf],
  ] as const) {
    const next = parseGatewayConfig(text);
    next.consumers.push({ name: 'alice', credentials: { 'key-auth': { key: 'k' } } });
    next.routes.splice(0, 1);
    const written = renderGatewayYaml(text, next);
    assert.deepEqual(reparse(written), checkGatewayShape(structuredClone(next)), label);
    assert.ok(written.includes('generated: do not edit by hand'), label);
    if (label === 'comment') assert.ok(written.includes('# the third route'), label);
  }
});

test('persist: random edits of a JSON-items file always read back as the new config', () => {
  let s = 7;
  const random = () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  let text = generated(30);
  let config = parseGatewayConfig(text);
  for (let step = 0; step < 60; step++) {
    const next = structuredClone(config);
    const n = Math.floor(random() * 1000);
    const pick = Math.floor(random() * 4);
    if (pick === 0) next.routes.push({ name: `x${n}`, match: { path: `/x${n}` }, policy: 'p0' });
    else if (pick === 1 && next.routes.length > 1)
      next.routes.splice(Math.floor(random() * next.routes.length), 1);
    else if (pick === 2) next.routes.reverse();
    else {
      const p = next.policies[Math.floor(random() * next.policies.length)]!;
      p.nodes = p.nodes.map((node) =>
        node.type === 'mocking'
          ? { ...node, config: { ...node.config, response_example: `s${step}` } }
          : node,
      );
    }
    const written = renderGatewayYaml(text, next);
    assert.deepEqual(reparse(written), checkGatewayShape(structuredClone(next)), `step ${step}`);
    text = written;
    config = next;
  }
  // Still one JSON item per line: the splice kept the file's form.
  assert.ok(text.split('\n').every((line) => line === '' || /^( {2}- \{|[a-z_]+:|#)/.test(line)));
});
