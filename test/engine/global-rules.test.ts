/**
 * Global rules (docs/global-rules.md): supernodes spliced right after the
 * listener of every policy, in list order, against a real `switchyard`
 * process: the rule answers or lets the request through on every route, a
 * policy with `global_rules: false` is left alone, and traces and metrics name
 * the spliced nodes `global:<rule>/<node>`.
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

const answer = (name: string, body: string, extra = '') => `
  - name: ${name}${extra}
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: '${body}', content_type: text/plain, with_mock_header: false } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }`;

const GATEWAY = `
global_rules:
  - { name: auth, supernode: require-key, description: every route needs a key }
  - { name: stamp, supernode: stamp, params: { value: gw-wide } }
supernodes:
  - name: require-key
    nodes:
      - { id: input, type: input }
      - { id: key, type: key-auth, config: { keys: [k1], header_name: x-key } }
      - { id: reject, type: client }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: key.in }
      - { from: key.success, to: output.in }
      - { from: key.denied, to: reject.in }
  - name: stamp
    params:
      value: { type: string, required: true }
    nodes:
      - { id: input, type: input }
      - { id: set, type: proxy-rewrite, config: { headers: { set: { x-stamp: '{{params.value}}' } } } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: set.in }
      - { from: set.success, to: output.in }
routes:
  - { name: a, match: { path: /a }, policy: a-policy }
  - { name: b, match: { path: /b }, policy: b-policy }
  - { name: open, match: { path: /open }, policy: open-policy }
policies:${answer('a-policy', 'a {{request.headers.x-stamp}}')}${answer('b-policy', 'b {{request.headers.x-stamp}}')}${answer('open-policy', 'open [{{request.headers.x-stamp}}]', '\n    global_rules: false')}
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

test('global rules: every route is refused without the key the rule checks, and served with it', async () => {
  for (const path of ['/a', '/b']) {
    const denied = await fetch(`${data}${path}`);
    assert.equal(denied.status, 401, path);
    await denied.body?.cancel();
    const ok = await fetch(`${data}${path}`, { headers: { 'x-key': 'k1' } });
    assert.equal(ok.status, 200, path);
    assert.equal(await ok.text(), `${path.slice(1)} gw-wide`);
  }
});

test('global rules: the second rule runs after the first, with its params value in its nodes', async () => {
  // The stamp set by rule 2 is what the policy sees; rule 1 denying first means no stamp was needed.
  const res = await fetch(`${data}/b`, { headers: { 'x-key': 'k1', 'x-stamp': 'client-sent' } });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'b gw-wide');
});

test('global rules: a policy with global_rules: false runs without them', async () => {
  const res = await fetch(`${data}/open`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'open []');
});

test('global rules: traces and metrics name the spliced nodes global:<rule>/<node>', async () => {
  const res = await fetch(`${data}/a`, { headers: { 'x-key': 'k1', 'x-debug': '1' } });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const id = res.headers.get('x-switchyard-trace-id');
  assert.ok(id, 'a trace id header');
  const trace = (await (await fetch(`${admin}/api/debug/traces/${id}`, { headers: auth })).json()) as {
    steps: { node_id: string }[];
  };
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['global:auth/key', 'global:stamp/set', 'm', 'out'],
  );
  const denied = await fetch(`${data}/b`, { headers: { 'x-debug': '1' } });
  assert.equal(denied.status, 401);
  assert.equal(denied.headers.get('x-switchyard-response-origin'), 'global:auth/key.denied');
  await denied.body?.cancel();

  const metrics = await (await fetch(`${admin}/metrics`, { headers: auth })).text();
  assert.match(
    metrics,
    /gateway_node_executions_total\{[^}]*policy="a-policy"[^}]*node_id="global:auth\/key"/,
  );
  assert.match(
    metrics,
    /gateway_node_executions_total\{[^}]*policy="b-policy"[^}]*node_id="global:stamp\/set"/,
  );
  assert.doesNotMatch(metrics, /policy="open-policy"[^}]*node_id="global:/);
});

test('global rules: validate names the key path of an unknown supernode or a rule with extra outputs', async () => {
  const bad = await spawnedConfig(
    SYSTEM,
    GATEWAY.replace('supernode: require-key,', 'supernode: require-kee,').replace(
      '      - { id: output, type: output }\n    edges:\n      - { from: input.out, to: set.in }',
      '      - { id: output, type: output }\n      - { id: odd, type: output }\n    edges:\n      - { from: input.out, to: set.in }',
    ),
  );
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    assert.match(run.output, /global_rules\[0\]\.supernode/);
    assert.match(run.output, /unknown supernode 'require-kee' \(did you mean 'require-key'\?\)/);
    assert.match(run.output, /global_rules\[1\]\.supernode/);
    assert.match(run.output, /output ports 'odd'/);
  } finally {
    bad.remove();
  }
});

test('global rules: a missing required param is reported at global_rules[i].params.<name>', async () => {
  const bad = await spawnedConfig(SYSTEM, GATEWAY.replace(', params: { value: gw-wide }', ''));
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    assert.match(run.output, /global_rules\[1\]\.params\.value/);
    assert.match(run.output, /parameter 'value' of supernode 'stamp' is required/);
  } finally {
    bad.remove();
  }
});
