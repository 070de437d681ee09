import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { compileGateway } from '../../src/engine/compile.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { templateFactory } from '../../src/engine/templates.js';
import { registry } from '../../src/plugins/index.js';

// docs/routing.md#request-bodies: header-only nodes keep request bodies streaming; an instance
// whose config names the body (template, legacy variable, condition) buffers it and is named.

const OUTCOMES: Record<string, string[]> = {
  cors: ['preflight'],
  'ip-restriction': ['denied'],
  'key-auth': ['denied'],
  'limit-count': ['limited'],
  'request-validation': ['denied'],
};

function compilePolicy(yaml: string) {
  const env = {};
  const runtime = compileGateway(checkGatewayShape(parse(yaml)), {
    registry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
  });
  const policy = runtime.policies.get('p');
  assert.ok(policy !== undefined);
  return policy;
}

function requestBuffering(nodes: string[]): { streams: boolean; report: unknown } {
  const ids = nodes.map((_, i) => `n${i}`);
  const chain = ['in', ...ids, 'up'];
  const edges = chain.slice(1).map((to, i) => {
    const from = chain[i] as string;
    const port = from === 'in' ? 'out' : 'success';
    return `      - { from: ${from}.${port}, to: ${to}.in }`;
  });
  // Outcome ports other than success must be wired too (to the client here).
  nodes.forEach((node, i) => {
    for (const port of OUTCOMES[node.split(',')[0]?.replace('type: ', '') ?? ''] ?? [])
      edges.push(`      - { from: n${i}.${port}, to: out.in }`);
  });
  const yaml = `
consumers:
  - { name: alice, credentials: { key-auth: { key: k1 } } }
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
${nodes.map((node, i) => `      - { id: n${i}, ${node} }`).join('\n')}
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: out, type: client }
    edges:
${edges.join('\n')}
      - { from: up.success, to: out.in }
`;
  const policy = compilePolicy(yaml);
  return { streams: policy.streamsRequestBody === true, report: policy.requestBuffering };
}

test('an auth, rewrite and limiting chain streams request bodies to the upstream', () => {
  const { streams, report } = requestBuffering([
    'type: cors',
    'type: real-ip, config: { source: http_x_forwarded_for }',
    'type: ip-restriction, config: { allow: [127.0.0.0/8] }',
    'type: key-auth, config: { use_consumers: true }',
    'type: request-id',
    "type: proxy-rewrite, config: { headers: { set: { x-user: '{{request.headers.x-user}}' } } }",
    'type: limit-count, config: { count: 10, time_window: 60 }',
  ]);
  assert.equal(streams, true);
  assert.deepEqual(report, []);
});

test('a rewrite whose template renders the request body buffers it and is named', () => {
  const { streams, report } = requestBuffering([
    'type: key-auth, config: { use_consumers: true }',
    "type: proxy-rewrite, config: { headers: { set: { x-body: '{{request.body}}' } } }",
  ]);
  assert.equal(streams, false);
  assert.deepEqual(report, [{ upstream: 'up', blocked_by: 'n1' }]);
});

test('a legacy $post_arg_ key of a limit buffers the body', () => {
  const { streams, report } = requestBuffering([
    'type: limit-count, config: { count: 10, time_window: 60, key_type: var, key: $post_arg_user }',
  ]);
  assert.equal(streams, false);
  assert.deepEqual(report, [{ upstream: 'up', blocked_by: 'n0' }]);
});

test('a node type that may read bodies (request-validation) still buffers', () => {
  const { streams, report } = requestBuffering([
    'type: key-auth, config: { use_consumers: true }',
    'type: request-validation, config: { body_schema: { type: object } }',
  ]);
  assert.equal(streams, false);
  assert.deepEqual(report, [{ upstream: 'up', blocked_by: 'n1' }]);
});

test('a policy without an upstream reads the body whole, so a trickling client still gets 408', () => {
  const policy = compilePolicy(`
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: hi } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`);
  assert.equal(policy.streamsRequestBody, false);
  assert.deepEqual(policy.requestBuffering, []);
});
