/**
 * F22 (operator review 3): an Admin write rewrote untouched flow-style lines of gateway.yaml
 * (`[GET, POST, OPTIONS]` → `[ GET, POST, OPTIONS ]`), making noisy git diffs. Only the lines of
 * the item a write changes may differ.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { renderGatewayYaml } from '../../src/config/persist.js';
import { startAdmin } from './harness.js';

const FLOW = `# flow collections written both ways, aligned values, spaced comments
consumers:
  - { name: alice, group: gold, credentials: { key-auth: { key: alice-key } } }
  - {name: bob, credentials: {key-auth: {key: bob-key}}}


routes:
  - { name: hello, match: { path: /hello, methods: [GET, POST, OPTIONS] }, policy: hello-policy }
  - name: other
    match:
      path:    /other            # aligned on purpose
      methods: [ GET ]
    policy: hello-policy
policies:
  - name: hello-policy
    nodes:
      - { id: in, type: listener }
      - id: cors
        type: cors
        config: { allowed_origins: ["https://app.example.com"], allowed_methods: [GET, POST, OPTIONS], max_age: 600 }
      - { id: m, type: mocking, config: { response_example: hello, response_status: 200 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cors.in }
      - {from: cors.preflight, to: out.in}
      - { from: cors.success, to: m.in }   # spaced comment
      - { from: m.success, to: out.in }
`;

/** `after` is `before` with one block of lines inserted (returned); fails otherwise. */
function insertedBlock(before: string, after: string): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  assert.equal(head + tail, a.length, `lines of the old file changed:\n${after}`);
  return b.slice(head, b.length - tail);
}

test('F22: POST a consumer: the file is the old one plus the new item lines, byte for byte', async () => {
  const h = await startAdmin({ onDisk: true, gatewayYaml: FLOW });
  try {
    const file = h.file as string;
    assert.equal(readFileSync(file, 'utf8'), FLOW);
    const res = await h.call('POST', '/api/consumers', {
      name: 'carol',
      credentials: { 'key-auth': { key: 'carol-key' } },
    });
    assert.equal(res.status, 201, await res.text());
    const after = readFileSync(file, 'utf8');
    const block = insertedBlock(FLOW, after);
    assert.deepEqual(parse(block.map((l) => l.slice(2)).join('\n')), [
      { name: 'carol', credentials: { 'key-auth': { key: 'carol-key' } } },
    ]);
    assert.ok(after.includes('methods: [GET, POST, OPTIONS] }'), after);
  } finally {
    await h.stop();
  }
});

test('F22: changing or removing one item changes only its own lines', () => {
  const current = parseGatewayConfig(FLOW);
  const edited = structuredClone(current);
  (edited.routes[1] as { policy: string; description?: string }).description = 'second';
  const text = renderGatewayYaml(FLOW, edited);
  assert.deepEqual(insertedBlock(FLOW, text), ['    description: second']);

  const removed = structuredClone(current);
  removed.consumers.splice(1, 1);
  const without = renderGatewayYaml(FLOW, removed);
  assert.equal(without, FLOW.replace('  - {name: bob, credentials: {key-auth: {key: bob-key}}}\n', ''));

  const changed = structuredClone(current);
  (changed.policies[0]!.nodes[2] as { config: Record<string, unknown> }).config['response_example'] = 'bye';
  const lines = renderGatewayYaml(FLOW, changed).split('\n');
  const old = FLOW.split('\n');
  assert.equal(lines.length, old.length);
  const differing = lines.filter((l, i) => l !== old[i]);
  assert.equal(differing.length, 1, differing.join('\n'));
  assert.match(differing[0]!, /id: m, type: mocking.*response_example: bye/);
});
