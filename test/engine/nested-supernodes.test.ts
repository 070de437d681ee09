/**
 * Nested supernodes and supernode parameters (docs/supernodes.md), against a
 * real `switchyard` process: an instance inside a definition runs as
 * `<outer>/<inner>/<node>` in traces and metrics, `{{params.x}}` takes each
 * instance's value (typed when it is the whole string), failures of a nested
 * instance reach the outer instance's error port, and cycles and bad
 * parameter values are refused with the chain or the key path.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnedConfig, startSpawned, validate, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: warn, format: json }
admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: pw }
debug: { enabled: true, trigger_header: x-debug, max_traces: 50 }
`;

const GATEWAY = `
supernodes:
  - name: answer
    params:
      text: { type: string, required: true }
      status: { type: integer, default: 200 }
    nodes:
      - { id: input, type: input }
      - { id: say, type: mocking, config: { response_example: 'says {{params.text}}', response_status: '{{params.status}}', content_type: text/plain, with_mock_header: false } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: say.in }
      - { from: say.success, to: output.in }
  - name: wrapper
    params:
      who: { type: string, default: nobody }
    nodes:
      - { id: input, type: input }
      - { id: inner, type: supernode, config: { name: answer, params: { text: 'hello {{params.who}}', status: 201 } } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: inner.in }
      - { from: inner.success, to: output.in }
  - name: failing
    nodes:
      - { id: input, type: input }
      - { id: boom, type: serverless-pre-function, config: { functions: ['function execute(ctx) error("boom") end'] } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: boom.in }
      - { from: boom.success, to: output.in }
  - name: wraps-failing
    nodes:
      - { id: input, type: input }
      - { id: deep, type: supernode, config: { name: failing } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: deep.in }
      - { from: deep.success, to: output.in }
routes:
  - { name: nested, match: { path: /nested }, policy: nested-policy }
  - { name: default, match: { path: /default }, policy: default-policy }
  - { name: fail, match: { path: /fail }, policy: fail-policy }
policies:
  - name: nested-policy
    nodes:
      - { id: in, type: listener }
      - { id: outer, type: supernode, config: { name: wrapper, params: { who: alice } } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: outer.in }
      - { from: outer.success, to: out.in }
  - name: default-policy
    nodes:
      - { id: in, type: listener }
      - { id: outer, type: supernode, config: { name: wrapper } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: outer.in }
      - { from: outer.success, to: out.in }
  - name: fail-policy
    nodes:
      - { id: in, type: listener }
      - { id: w, type: supernode, config: { name: wraps-failing } }
      - { id: caught, type: mocking, config: { response_example: caught, response_status: 503, with_mock_header: false } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: w.in }
      - { from: w.success, to: out.in }
      - { from: w.error, to: caught.in }
      - { from: caught.success, to: out.in }
`;

let config: SpawnedConfig;
let gw: GatewayProcess;
let data = '';
let admin = '';
const auth = { authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}` };

before(async () => {
  config = await spawnedConfig(SYSTEM, GATEWAY);
  gw = await startSpawned(config);
  data = `http://127.0.0.1:${config.dataPort}`;
  admin = `http://127.0.0.1:${config.adminPort}`;
});

after(async () => {
  await gw.stop();
  config.remove();
});

test('nested supernodes: params flow from the policy through the outer supernode into the inner one', async () => {
  const res = await fetch(`${data}/nested`);
  assert.equal(res.status, 201, 'the whole-string {{params.status}} became the integer 201');
  assert.equal(await res.text(), 'says hello alice');
  const fallback = await fetch(`${data}/default`);
  assert.equal(await fallback.text(), 'says hello nobody', 'the declared default applies');
});

test('nested supernodes: traces and metrics name the inner node <outer>/<inner>/<node>', async () => {
  const res = await fetch(`${data}/nested`, { headers: { 'x-debug': '1' } });
  await res.body?.cancel();
  assert.equal(res.headers.get('x-switchyard-response-origin'), 'outer/inner/say.success');
  const id = res.headers.get('x-switchyard-trace-id');
  const trace = (await (await fetch(`${admin}/api/debug/traces/${id}`, { headers: auth })).json()) as {
    steps: { node_id: string }[];
  };
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['outer/inner/say', 'out'],
  );
  const metrics = await (await fetch(`${admin}/metrics`, { headers: auth })).text();
  assert.match(metrics, /gateway_node_executions_total\{[^}]*node_id="outer\/inner\/say"/);
});

test('nested supernodes: a failure two levels down leaves through the outer instance error port', async () => {
  const res = await fetch(`${data}/fail`);
  assert.equal(res.status, 503);
  assert.equal(await res.text(), 'caught');
});

test('nested supernodes: a nesting cycle is refused with the chain', async () => {
  const cyclic = GATEWAY.replace(
    '      - { id: boom, type: serverless-pre-function, config: { functions: [\'function execute(ctx) error("boom") end\'] } }',
    '      - { id: boom, type: supernode, config: { name: wraps-failing } }',
  );
  assert.notEqual(cyclic, GATEWAY);
  const bad = await spawnedConfig(SYSTEM, cyclic);
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    // Reported once, at the inner node that closes the loop, with the whole chain.
    assert.match(
      run.output,
      /supernodes\[3\]\.nodes\[1\]\.config\.name: supernode nesting cycle: failing → wraps-failing → failing/,
    );
    assert.match(run.output, /^1 error\(s\)$/m);
  } finally {
    bad.remove();
  }
});

test('supernode params: a wrong type, an undeclared value and an unknown {{params.x}} name their key paths', async () => {
  const broken = GATEWAY.replace('params: { who: alice }', 'params: { who: 7, whom: x }').replace(
    "response_example: 'says {{params.text}}'",
    "response_example: 'says {{params.txt}}'",
  );
  const bad = await spawnedConfig(SYSTEM, broken);
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    assert.match(
      run.output,
      /policies\[0\]\.nodes\[1\]\.config\.params\.who: .*must be string \(got integer\)/,
    );
    assert.match(
      run.output,
      /policies\[0\]\.nodes\[1\]\.config\.params\.whom: .*declares no parameter 'whom'/,
    );
    assert.match(
      run.output,
      /supernodes\[0\]\.nodes\[1\]\.config\.response_example: .*\{\{params\.txt\}\} names no declared parameter \(did you mean 'text'\?\)/,
    );
  } finally {
    bad.remove();
  }
});
