/** Unknown node-config keys stay rejected; a near miss of a declared key says which one was meant. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileIssues } from '../../src/migrate/migrate.js';
import { nearestKey } from '../../src/config/schema-validate.js';

const policy = (config: string, type = 'mocking') => `routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: ${type}, config: ${config} }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;
const messages = (text: string) => compileIssues(text, { env: {} }).map((i) => `${i.path} | ${i.message}`);

test('node config: a near-miss unknown key is rejected with "did you mean" naming the declared key', () => {
  const found = messages(policy('{ response_exampel: hi }'));
  assert.equal(found.length > 0, true);
  assert.ok(
    found.some((m) =>
      m.startsWith(
        "policies[0].nodes[1].config.response_exampel | policy 'p': node 'm' (type 'mocking'): config.response_exampel unknown key (did you mean 'response_example'?)",
      ),
    ),
    found.join('\n'),
  );
});

test('node config: an unknown key far from every declared key is rejected without a suggestion', () => {
  const found = messages(policy('{ response_example: hi, colour: red }'));
  assert.deepEqual(found, [
    "policies[0].nodes[1].config.colour | policy 'p': node 'm' (type 'mocking'): config.colour unknown key",
  ]);
});

test("node config: a near miss inside a nested object suggests from that object's keys", () => {
  const found = messages(
    policy('{ targets: [{ host: 127.0.0.1, port: 80, wieght: 1 }] }', 'upstream').replace(
      '{ from: m.success, to: out.in }',
      '{ from: m.success, to: out.in }\n      - { from: m.error, to: out.in }',
    ),
  );
  assert.ok(
    found.some((m) => m.includes("config.targets[0].wieght unknown key (did you mean 'weight'?)")),
    found.join('\n'),
  );
});

test('node config: nearestKey picks the closest declared key within distance 2', () => {
  assert.equal(nearestKey('timout', ['timeout', 'retries']), 'timeout');
  assert.equal(nearestKey('tmt', ['timeout']), undefined);
  assert.equal(nearestKey('keys', ['key', 'keys_file']), 'key');
  assert.equal(nearestKey('x', []), undefined);
});
