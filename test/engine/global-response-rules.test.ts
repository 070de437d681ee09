/**
 * Global rules with `phase: response` (docs/global-rules.md#response-rules):
 * a supernode spliced before every `client` node of every policy. Against a
 * real `switchyard` process: the header the rule sets is on every client path
 * of two policies (both branches of a condition, and the 401 of a request
 * rule's own client), a policy with `global_rules: false` is left alone, and a
 * trace shows the spliced node once. In process: rule order, a failing
 * response node, and the key paths of a bad `phase`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { spawnedConfig, startSpawned, validate, type SpawnedConfig } from '../admin/spawned.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { compileGateway } from '../../src/engine/compile.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { Context } from '../../src/core/context.js';
import { runPolicy } from '../../src/engine/run.js';
import { silentLogger } from '../../src/core/logger.js';
import { templateFactory } from '../../src/engine/templates.js';
import { testRegistry } from '../support/test-plugins.js';

const SYSTEM = `
listener: { bind: 127.0.0.1, port: @DATA_PORT@ }
logging: { level: warn, format: json }
admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: pw }
debug: { enabled: true, trigger_header: x-debug, max_traces: 50 }
`;

/** A policy whose condition sends `x-branch: b` to one mocking node and client, the rest to another. */
const branching = (name: string, extra = '') => `
  - name: ${name}${extra}
    nodes:
      - { id: in, type: listener }
      - { id: which, type: condition, config: { conditions: [["http_x_branch", "==", "b"]] } }
      - { id: a, type: mocking, config: { response_example: '${name} a', content_type: text/plain, with_mock_header: false } }
      - { id: b, type: mocking, config: { response_example: '${name} b', content_type: text/plain, with_mock_header: false } }
      - { id: out, type: client }
      - { id: out-b, type: client }
    edges:
      - { from: in.out, to: which.in }
      - { from: which.false, to: a.in }
      - { from: which.true, to: b.in }
      - { from: a.success, to: out.in }
      - { from: b.success, to: out-b.in }`;

const GATEWAY = `
global_rules:
  - { name: auth, supernode: require-key }
  - { name: stamp, supernode: stamp-response, phase: response, params: { value: edge-1 } }
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
  - name: stamp-response
    params:
      value: { type: string, required: true }
    nodes:
      - { id: input, type: input }
      - { id: set, type: response-rewrite, config: { headers: { set: { x-gateway: '{{params.value}}' } } } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: set.in }
      - { from: set.success, to: output.in }
routes:
  - { name: one, match: { path: /one }, policy: one-policy }
  - { name: two, match: { path: /two }, policy: two-policy }
  - { name: open, match: { path: /open }, policy: open-policy }
policies:${branching('one-policy')}${branching('two-policy')}${branching('open-policy', '\n    global_rules: false')}
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

test('global response rules: the header is added on every client path of two policies', async () => {
  for (const path of ['/one', '/two']) {
    for (const branch of ['a', 'b']) {
      const res = await fetch(`${data}${path}`, { headers: { 'x-key': 'k1', 'x-branch': branch } });
      assert.equal(res.status, 200, gw.output());
      assert.equal(await res.text(), `${path.slice(1)}-policy ${branch}`);
      assert.equal(res.headers.get('x-gateway'), 'edge-1', `${path} branch ${branch}`);
    }
    // The request rule's own client (its 401) is a client node of the policy too.
    const denied = await fetch(`${data}${path}`);
    assert.equal(denied.status, 401);
    await denied.arrayBuffer();
    assert.equal(denied.headers.get('x-gateway'), 'edge-1', `${path} 401`);
  }
});

test('global response rules: a policy with global_rules: false gets neither phase', async () => {
  const res = await fetch(`${data}/open`, { headers: { 'x-branch': 'b' } });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'open-policy b');
  assert.equal(res.headers.get('x-gateway'), null);
});

test('global response rules: a trace shows the spliced node once, before the client, as global:<rule>@<client>/<node>', async () => {
  const res = await fetch(`${data}/one`, { headers: { 'x-key': 'k1', 'x-branch': 'b', 'x-debug': '1' } });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const id = res.headers.get('x-switchyard-trace-id');
  assert.ok(id, 'a trace id header');
  const trace = (await (await fetch(`${admin}/api/debug/traces/${id}`, { headers: auth })).json()) as {
    steps: { node_id: string }[];
  };
  assert.deepEqual(
    trace.steps.map((s) => s.node_id),
    ['global:auth/key', 'which', 'b', 'global:stamp@out-b/set', 'out-b'],
  );
});

test('global response rules: validate names the key path of a phase that is neither request nor response', async () => {
  const bad = await spawnedConfig(SYSTEM, GATEWAY.replace('phase: response', 'phase: reply'));
  try {
    const run = validate(bad);
    assert.equal(run.status, 1, run.output);
    assert.match(run.output, /global_rules\[1\]\.phase/);
    assert.match(run.output, /request.*response/);
  } finally {
    bad.remove();
  }
});

function compile(yaml: string) {
  return compileGateway(checkGatewayShape(parse(yaml)), {
    registry: testRegistry,
    logger: silentLogger,
    env: {},
    templateFactory: templateFactory({}),
  });
}

async function run(yaml: string, headers: Record<string, string> = {}) {
  const policy = compile(yaml).policies.get('p');
  assert.ok(policy);
  const ctx = new Context(
    {
      method: 'GET',
      url: '/x',
      host: 'h',
      scheme: 'http',
      protocol: 'http1',
      headers,
      remoteAddress: '127.0.0.1',
      remotePort: 1,
    },
    new AbortController().signal,
  );
  const steps: string[] = [];
  await runPolicy(policy, ctx, { logger: silentLogger }, { step: (node) => steps.push(node.id) });
  return { ctx, steps };
}

const tagRule = (name: string, type = 'test-tag', config = `{ tag: ${name} }`) => `
  - name: ${name}
    nodes:
      - { id: input, type: input }
      - { id: t, type: ${type}, config: ${config} }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: t.in }
      - { from: t.success, to: output.in }`;

const POLICY = `
policies:
  - name: p
    error_handler: eh
    nodes:
      - { id: in, type: listener }
      - { id: g, type: test-gate }
      - { id: body, type: test-tag, config: { tag: policy } }
      - { id: eh, type: error-handler, config: { status_code: 599 } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: g.in }
      - { from: g.success, to: body.in }
      - { from: g.denied, to: out.in }
      - { from: body.success, to: out.in }
      - { from: eh.success, to: out.in }
`;

test('global response rules: several run in list order before the client, on every branch, and request rules still run first', async () => {
  const yaml = `
global_rules:
  - { name: first, supernode: first, phase: response }
  - { name: early, supernode: early }
  - { name: second, supernode: second, phase: response }
supernodes:${tagRule('first')}${tagRule('early')}${tagRule('second')}
${POLICY}`;
  const ok = await run(yaml);
  assert.equal(ok.ctx.response.headers['x-trail'], 'early,policy,first,second');
  assert.deepEqual(ok.steps, [
    'global:early/t',
    'g',
    'body',
    'global:first@out/t',
    'global:second@out/t',
    'out',
  ]);
  const denied = await run(yaml, { 'x-deny': '1' });
  assert.equal(denied.ctx.response.status, 403);
  assert.equal(denied.ctx.response.headers['x-trail'], 'early,first,second');
});

test('global response rules: a failing response node answers with its own error, without running the error_handler again', async () => {
  const yaml = `
global_rules:
  - { name: broken, supernode: broken, phase: response }
supernodes:${tagRule('broken', 'test-fail', '{ code: BROKEN }')}
${POLICY}`;
  const { ctx, steps } = await run(yaml);
  assert.equal(ctx.response.status, 503);
  assert.deepEqual(
    ctx.errors.map((e) => `${e.node_id} ${e.code}`),
    ['global:broken@out/t BROKEN'],
  );
  assert.deepEqual(steps, ['g', 'body', 'global:broken@out/t', 'out']);
});

test('global response rules: a node id under global:<rule>@ is reserved', () => {
  const yaml = `
global_rules:
  - { name: first, supernode: first, phase: response }
supernodes:${tagRule('first')}
${POLICY.replace('{ id: body, type: test-tag', "{ id: 'global:first@x', type: test-tag")
  .replace('to: body.in', "to: 'global:first@x.in'")
  .replace('from: body.success', "from: 'global:first@x.success'")}`;
  try {
    compile(yaml);
    assert.fail('expected a rejection');
  } catch (err) {
    assert.ok(err instanceof ConfigRejected, String(err));
    assert.deepEqual(
      err.issues.map((i) => `${i.path}: ${i.message}`),
      ["policies[0].nodes[2].id: policy 'p': node id 'global:first@x' is reserved for global rule 'first'"],
    );
  }
});
