/**
 * How validate's errors read (operator review 3, §5): an edge error at the edge's own line with a
 * suggestion and without derived errors (F18), every error in one pass (F19), one "did you mean"
 * for stores, route keys, system keys, ports and node ids (F20), and the quoting hint for a bare
 * `${…}` in a flow collection (F9).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileIssues } from '../../src/migrate/migrate.js';
import { locateIssues } from '../../src/config/yaml-locate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected, type ConfigIssue } from '../../src/config/schema-validate.js';

const GOOD = `stores:
  - { name: main, type: redis, url: redis://127.0.0.1:1 }
routes:
  - { name: users, match: { path: /users/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { keys: [k] } }
      - id: quota
        type: limit-count
        config: { count: 5, time_window: 60, policy: redis, store: main }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
      - { from: auth.denied, to: client.in }
      - { from: auth.success, to: quota.in }
      - { from: quota.limited, to: client.in }
      - { from: quota.success, to: up.in }
      - { from: up.success, to: client.in }
`;

/** The issues of `text` located in it (as `validate` prints them), as `line | path | message`. */
function located(text: string): string[] {
  return locateIssues(text, compileIssues(text, { env: {} })).map(
    (i) => `${i.line} | ${i.path} | ${i.message}`,
  );
}

/** The 1-based line of the first line of `text` containing `needle`. */
const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

function edit(from: string, to: string): string {
  assert.ok(GOOD.includes(from), from);
  return GOOD.replace(from, to);
}

function rejected(run: () => unknown): ConfigIssue[] {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues;
    throw err;
  }
  assert.fail('the configuration was accepted');
}

test('F18/F19/F20: the unchanged config compiles without an issue', () => {
  assert.deepEqual(located(GOOD), []);
});

test('F18: an edge to an unknown node is one error, at the edge line, with a suggestion and no derived "must be wired"', () => {
  const text = edit('{ from: quota.success, to: up.in }', '{ from: quota.success, to: uup.in }');
  assert.deepEqual(located(text), [
    `${lineOf(text, 'to: uup.in')} | policies[0].edges[4] | policy 'p': edge quota.success -> uup.in references unknown node 'uup' (did you mean 'up'?)`,
  ]);
});

test('F18: an edge from an unknown node does not also report the node it meant as unwired', () => {
  const text = edit('{ from: up.success, to: client.in }', '{ from: upp.success, to: client.in }');
  assert.deepEqual(located(text), [
    `${lineOf(text, 'from: upp.success')} | policies[0].edges[5] | policy 'p': edge upp.success -> client.in references unknown node 'upp' (did you mean 'up'?)`,
  ]);
});

test('F18/F20: a wrong output port is reported at the edge with the port meant, without "denied must be wired"', () => {
  const text = edit('{ from: auth.denied, to: client.in }', '{ from: auth.deny, to: client.in }');
  assert.deepEqual(located(text), [
    `${lineOf(text, 'auth.deny')} | policies[0].edges[1] | policy 'p': edge auth.deny -> client.in: node 'auth' (type 'key-auth') has no output port 'deny' (did you mean 'denied'?) (ports: success, denied, error)`,
  ]);
});

test('F18: a port far from every declared one still reports the unwired port it left', () => {
  const found = located(edit('{ from: auth.denied, to: client.in }', '{ from: auth.zzz, to: client.in }'));
  assert.equal(found.length, 2, found.join('\n'));
  assert.match(found[0]!, /edges\[1\] .*no output port 'zzz' \(ports: success, denied, error\)$/);
  assert.match(found[1]!, /nodes\[1\] .*output port 'denied' of node 'auth' .* must be wired/);
});

test('F18: a target port other than in is reported at the edge line', () => {
  const text = edit('{ from: auth.success, to: quota.in }', '{ from: auth.success, to: quota.input }');
  assert.deepEqual(located(text), [
    `${lineOf(text, 'quota.input')} | policies[0].edges[2] | policy 'p': edge auth.success -> quota.input: target port must be 'in' (got 'input')`,
  ]);
});

test('F20: an unknown store name suggests the declared store', () => {
  const found = located(edit('store: main }', 'store: mian }'));
  assert.equal(found.length, 1, found.join('\n'));
  assert.match(found[0]!, /config\.store unknown store 'mian' \(did you mean 'main'\?\)$/);
});

test('F20: a typo in a route match key suggests the key', () => {
  const found = located(edit('match: { path: /users/* }', 'match: { pth: /users/* }'));
  assert.deepEqual(found, ["4 | routes[0].match.pth | unknown key (did you mean 'path'?)"]);
});

test('F8/F20: the key-auth key the old docs named (header) points at header_name', () => {
  const found = located(edit('config: { keys: [k] }', 'config: { keys: [k], header: x-key }'));
  assert.equal(found.length, 1, found.join('\n'));
  assert.match(found[0]!, /config\.header unknown key \(did you mean 'header_name'\?\)$/);
});

test('F19: a config error found by the schema and one found when the node is created show in one pass', () => {
  const text = edit('config: { keys: [k] }', 'config: { }').replace(
    'config: { targets: [{ host: 127.0.0.1, port: 9 }] }',
    'config: { targets: [{ host: 127.0.0.1, port: 9, wieght: 1 }] }',
  );
  const found = located(text);
  assert.equal(found.length, 2, found.join('\n'));
  assert.ok(
    found.some((m) => m.includes("node 'up' (type 'upstream'): config.targets[0].wieght unknown key")),
    found.join('\n'),
  );
  assert.ok(
    found.some((m) => m.includes("key-auth plugin requires 'keys' or 'use_consumers: true'")),
    found.join('\n'),
  );
});

test('F19: a shape error in one route does not hide the compile errors of the policies', () => {
  const text = edit('match: { path: /users/* }', 'match: { pth: /users/* }').replace(
    'config: { keys: [k] }',
    'config: { }',
  );
  const found = located(text);
  assert.equal(found.length, 2, found.join('\n'));
  assert.equal(found[0], "4 | routes[0].match.pth | unknown key (did you mean 'path'?)");
  assert.ok(
    found.some((m) => m.includes("requires 'keys' or 'use_consumers: true'")),
    found.join('\n'),
  );
});

test('F19: a policy left out for a shape error is not reported again by the routes naming it', () => {
  const text = edit('  - name: p\n', '  - name: p\n    nodez: []\n');
  const found = located(text);
  assert.equal(found.length, 1, found.join('\n'));
  assert.match(found[0]!, /policies\[0\]\.nodez \| unknown key/);
});

test('F19: a wiring error and a create-time config error show in one pass', () => {
  const text = edit('config: { keys: [k] }', 'config: { }').replace(
    '      - { from: quota.limited, to: client.in }\n',
    '',
  );
  const found = located(text);
  assert.equal(found.length, 2, found.join('\n'));
  assert.ok(
    found.some((m) => m.includes("output port 'limited' of node 'quota'")),
    found.join('\n'),
  );
  assert.ok(
    found.some((m) => m.includes("requires 'keys' or 'use_consumers: true'")),
    found.join('\n'),
  );
});

const SYSTEM = `listener: { bind: 127.0.0.1, port: 8080 }
logging: { level: info, format: json }
admin: { username: admin, bind: 127.0.0.1, port: 9090, password: long-enough-password }
`;

test('F19/F20: system.yaml reports an unknown key (with its suggestion) and a bad value of another section together', () => {
  const text = SYSTEM.replace('level: info', 'level: verbose').replace('password:', 'pasword:');
  const issues = rejected(() => parseSystemConfig(text, {}));
  assert.deepEqual(
    issues.map((i) => `${i.path}: ${i.message}`),
    [
      "admin.pasword: unknown key (did you mean 'password'?)",
      "logging.level: 'verbose' is not a log level; use one of trace, debug, info, warn, error, fatal, silent",
    ],
  );
  assert.doesNotThrow(() => parseSystemConfig(SYSTEM, {}));
});

test('F19: a cross-field rule of a section the schema rejected is not reported twice', () => {
  const text = SYSTEM.replace('level: info', 'level: verbose, colour: red');
  const issues = rejected(() => parseSystemConfig(text, {}));
  assert.deepEqual(
    issues.map((i) => i.path),
    ['logging.colour'],
  );
});

test('F9: a bare ${…} inside a flow map or sequence says to quote it', () => {
  const consumers =
    'consumers:\n  - name: alice\n    credentials:\n      key-auth:    { key: ${ALICE_API_KEY} }\n';
  const [issue] = rejected(() => parseGatewayConfig(consumers));
  assert.equal(issue?.line, 4);
  assert.match(
    issue.message,
    /^invalid YAML: .*\(quote values containing \$\{…\} inside \{ \} or \[ \]: "\$\{NAME\}"\)$/,
  );
  const [seq] = rejected(() => parseGatewayConfig('routes:\n  - { name: r, methods: [ ${M}, GET ] }\n'));
  assert.match(seq!.message, /quote values containing/);
  assert.doesNotThrow(() => parseGatewayConfig(consumers.replace('${ALICE_API_KEY}', '"${ALICE_API_KEY}"')));
});

test('F9: other YAML errors get no quoting hint', () => {
  const [issue] = rejected(() => parseGatewayConfig('routes:\n  - { name: r\n'));
  assert.doesNotMatch(issue!.message, /quote/);
});
