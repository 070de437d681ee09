import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { compileGateway, type Runtime } from '../../src/engine/compile.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { silentLogger } from '../../src/core/logger.js';
import { templateFactory } from '../../src/engine/templates.js';
import { testRegistry } from '../support/test-plugins.js';
import { Context } from '../../src/core/context.js';
import { runPolicy } from '../../src/engine/run.js';

function compile(yaml: string, env: NodeJS.ProcessEnv = {}): Runtime {
  return compileGateway(checkGatewayShape(parse(yaml)), {
    registry: testRegistry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
  });
}

function rejection(yaml: string, env: NodeJS.ProcessEnv = {}): ConfigRejected {
  try {
    compile(yaml, env);
  } catch (err) {
    if (err instanceof ConfigRejected) return err;
    throw err;
  }
  assert.fail('expected the configuration to be rejected');
}

function messages(yaml: string): string[] {
  return rejection(yaml).issues.map((i) => i.message);
}

const MOCK = `{ id: m, type: mocking, config: { response_example: ok } }`;

const valid = `
routes:
  - { name: r, match: { path: /a/* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - ${MOCK}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

test('compiler: a minimal listener → mocking → client policy compiles and routes', () => {
  const rt = compile(valid);
  assert.equal(rt.policies.size, 1);
  assert.equal(rt.router.match('GET', 'h', '/a/b', {})?.target.policy.name, 'p');
  assert.equal(rt.policies.get('p')?.entry?.id, 'm');
});

test('compiler: edge endpoints split on the last dot; a node id may contain dots', () => {
  const rt = compile(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: my.mock, type: mocking, config: { response_example: ok } }
      - { id: out, type: client }
    edges:
      - { from: in, to: my.mock.in }
      - { from: my.mock.success, to: out.in }
`);
  assert.equal(rt.policies.get('p')?.entry?.id, 'my.mock');
});

test('compiler: `out` is an alias of `success` on the source side', () => {
  const rt = compile(valid.replace('m.success', 'm.out'));
  assert.equal(rt.policies.get('p')?.entry?.next['success']?.id, 'out');
});

test('compiler: unknown plugin type names policy, node and type', () => {
  const msgs = messages(valid.replace('type: mocking', 'type: no-such-type'));
  assert.ok(
    msgs.some(
      (m) =>
        m.includes("policy 'p'") && m.includes("node 'm'") && m.includes('Unknown plugin type: no-such-type'),
    ),
  );
});

test('compiler: an unwired mandatory outcome port is rejected with the reference message', () => {
  const msgs = messages(`
policies:
  - name: my-policy
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: test-gate }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: out.in }
`);
  // The reference's wording, then a hint at `switchyard migrate`.
  assert.ok(
    msgs.some((m) =>
      m.startsWith(
        "policy 'my-policy': output port 'denied' of node 'auth' (type 'test-gate') must be wired — add an edge from 'auth.denied' (or run 'switchyard migrate'",
      ),
    ),
    msgs.join('\n'),
  );
});

test('compiler: an unwired success port is rejected too', () => {
  const msgs = messages(
    valid.replace('      - { from: m.success, to: out.in }\n', '      - { from: in.out, to: out.in }\n'),
  );
  assert.ok(
    msgs.some((m) => m.includes("output port 'success' of node 'm'") && m.includes("'m.success'")),
    msgs.join('\n'),
  );
});

test('compiler: an edge naming an undeclared port is rejected naming node and port', () => {
  const msgs = messages(
    valid.replace('m.success, to: out.in', 'm.success, to: out.in }\n      - { from: m.denied, to: out.in'),
  );
  assert.ok(
    msgs.some((m) => m.includes("node 'm'") && m.includes("no output port 'denied'")),
    msgs.join('\n'),
  );
});

test('compiler: fan-out (two edges from one port) is rejected', () => {
  const msgs = messages(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - ${MOCK}
      - { id: e, type: echo }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: in.out, to: e.in }
      - { from: m.success, to: out.in }
      - { from: e.success, to: out.in }
`);
  assert.ok(
    msgs.some((m) => m.includes("output port 'success' of node 'in'") && m.includes('fan-out')),
    msgs.join('\n'),
  );
});

test('F4: fan-in: a node takes several incoming edges, runs once on whichever branch led to it, and the trace shows it once', async () => {
  // Both exits of the gate (success and denied) enter one shared tagger `m`, then the client.
  const rt = compile(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: g, type: test-gate }
      - { id: a, type: test-tag, config: { tag: a } }
      - { id: m, type: test-tag, config: { tag: shared } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: g.in }
      - { from: g.success, to: a.in }
      - { from: a.success, to: m.in }
      - { from: g.denied, to: m.in }
      - { from: m.success, to: out.in }
`);
  const policy = rt.policies.get('p');
  assert.ok(policy);
  for (const [headers, trail, path] of [
    [{}, 'a,shared', ['g', 'a', 'm', 'out']],
    [{ 'x-deny': '1' }, 'shared', ['g', 'm', 'out']],
  ] as const) {
    const ctx = new Context(
      {
        method: 'GET',
        url: '/x',
        host: 'h',
        scheme: 'http',
        protocol: 'http1',
        headers: { ...headers },
        remoteAddress: '127.0.0.1',
        remotePort: 1,
      },
      new AbortController().signal,
    );
    const steps: string[] = [];
    await runPolicy(policy, ctx, { logger: silentLogger }, { step: (node) => steps.push(node.id) });
    assert.equal(ctx.response.headers['x-trail'], trail);
    assert.deepEqual(steps, path);
  }
  // Fan-in into a supernode instance's input compiles too (a junction was always allowed).
  compile(`
supernodes:
  - name: wrap
    nodes:
      - { id: input, type: input }
      - { id: t, type: test-tag, config: { tag: inner } }
      - { id: output, type: output }
    edges:
      - { from: input.out, to: t.in }
      - { from: t.success, to: output.in }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: g, type: test-gate }
      - { id: w, type: supernode, config: { name: wrap } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: g.in }
      - { from: g.success, to: w.in }
      - { from: g.denied, to: w.in }
      - { from: w.success, to: out.in }
`);
});

test('F4: fan-in: a cycle is still refused, at the key path of the edge that closes it', () => {
  const err = rejection(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: g, type: test-gate }
      - { id: a, type: test-tag, config: { tag: a } }
      - { id: b, type: test-tag, config: { tag: b } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: g.in }
      - { from: g.success, to: a.in }
      - { from: g.denied, to: out.in }
      - { from: a.success, to: b.in }
      - { from: b.success, to: a.in }
`);
  const issue = err.issues.find((i) => i.message.includes('cycle'));
  assert.ok(issue, err.issues.map((i) => i.message).join('\n'));
  assert.equal(issue.path, 'policies[0].edges[4]');
  assert.equal(
    issue.message,
    "policy 'p': the graph has a cycle: a → b → a (closed by edge b.success -> a.in)",
  );
  // The cycle is the only problem: `a` taking edges from `g` and `b` is fan-in, not an error.
  assert.equal(err.issues.length, 1, err.issues.map((i) => i.message).join('\n'));
});

test('compiler: listener and client are required; extra listeners rejected', () => {
  const noListener = messages(`
policies:
  - name: p
    nodes: [${MOCK}, { id: out, type: client }]
    edges: [{ from: m.success, to: out.in }]
`);
  assert.ok(noListener.includes("policy 'p': a listener node is required"), noListener.join('\n'));
  const noClient = messages(`
policies:
  - name: p
    nodes: [{ id: in, type: listener }, { id: e, type: echo }]
    edges: [{ from: in.out, to: e.in }]
`);
  assert.ok(
    noClient.some((m) => m.includes('a client node is required')),
    noClient.join('\n'),
  );
});

test('compiler: edges to unknown nodes and orphan nodes are reported together', () => {
  const msgs = messages(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - ${MOCK}
      - { id: lonely, type: echo }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: ghost.in }
`);
  assert.ok(
    msgs.some((m) => m.includes("unknown node 'ghost'")),
    msgs.join('\n'),
  );
  assert.ok(
    msgs.some((m) => m.includes("node 'lonely' is not connected")),
    msgs.join('\n'),
  );
});

test('compiler: error_handler must name an existing node', () => {
  const msgs = messages(valid.replace('  - name: p\n', '  - name: p\n    error_handler: nope\n'));
  assert.ok(
    msgs.some((m) => m.includes("error_handler 'nope'")),
    msgs.join('\n'),
  );
});

test('compiler: duplicate node ids and duplicate resource names are rejected', () => {
  const msgs = messages(valid.replace(`      - ${MOCK}\n`, `      - ${MOCK}\n      - ${MOCK}\n`));
  assert.ok(
    msgs.some((m) => m.includes("duplicate node id 'm'")),
    msgs.join('\n'),
  );
  const dupRoute = messages(
    valid.replace('routes:\n', 'routes:\n  - { name: r, match: { path: /b }, policy: p }\n'),
  );
  assert.ok(dupRoute.includes("routes: duplicate name 'r'"), dupRoute.join('\n'));
});

test('compiler: a cycle is rejected', () => {
  const msgs = messages(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: x, type: test-fail }
      - { id: y, type: test-fail }
      - { id: eh, type: error-handler }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: x.in }
      - { from: x.success, to: out.in }
      - { from: x.error, to: eh.in }
      - { from: eh.success, to: y.in }
      - { from: y.success, to: out.in }
      - { from: y.error, to: eh.in }
`);
  assert.ok(
    msgs.some((m) => m.includes('cycle')),
    msgs.join('\n'),
  );
});

test('compiler: a node config schema error names policy, node and key path', () => {
  const err = rejection(valid.replace('response_example: ok', 'response_example: ok, response_status: 42'));
  const issue = err.issues.find((i) => i.path === 'policies[0].nodes[1].config.response_status');
  assert.ok(issue, JSON.stringify(err.issues));
  assert.match(issue.message, /policy 'p'.*node 'm'.*response_status/);
});

test('compiler: a route with an unknown policy is rejected', () => {
  const msgs = messages(valid.replace('policy: p }', 'policy: nope }'));
  assert.ok(msgs.includes("route 'r': unknown policy 'nope'"), msgs.join('\n'));
});

test('compiler: runtime python and the unpack node are rejected', () => {
  const python = messages(valid.replace('response_example: ok', 'response_example: ok, runtime: python'));
  assert.ok(
    python.some((m) => m.includes("runtime 'python' is not supported")),
    python.join('\n'),
  );
  const unpack = messages(valid.replace('type: mocking', 'type: unpack'));
  assert.ok(
    unpack.some((m) => m.includes('unpack node is not implemented')),
    unpack.join('\n'),
  );
});

test('compiler: ${NAME:-default} resolves in node configs and route matches at compile time', () => {
  const rt = compile(
    valid.replace('path: /a/*', 'path: "${PREFIX:-/z}/*"').replace('response_status: 42', ''),
    { PREFIX: '/env' },
  );
  assert.ok(rt.router.match('GET', undefined, '/env/x', {}));
  assert.equal(rt.router.match('GET', undefined, '/z/x', {}), undefined);
  // The stored config keeps the placeholder.
  assert.equal(rt.config.routes[0]?.match.path, '${PREFIX:-/z}/*');
});

test('compiler: a numeric field written as ${PORT:-…} is coerced after substitution', () => {
  const rt = compile(
    valid.replace('response_example: ok', 'response_example: ok, response_status: "${ST:-201}"'),
  );
  assert.ok(rt.policies.get('p'));
});

const shared = `
plugin_configs:
  - name: gate-base
    type: test-gate
    config: { status: 451 }
  - name: mock-base
    type: mocking
    config: { response_example: shared, response_status: 202 }
`;

test('config_ref: shared config merges shallowly under local keys', () => {
  const rt = compile(
    shared +
      valid.replace(
        MOCK,
        '{ id: m, type: mocking, config_ref: mock-base, config: { response_status: 203 } }',
      ),
  );
  assert.ok(rt.policies.get('p'));
});

test('config_ref: unknown name and type mismatch are rejected', () => {
  const unknown = messages(shared + valid.replace(MOCK, '{ id: m, type: mocking, config_ref: nope }'));
  assert.ok(
    unknown.some((m) => m.includes("config_ref 'nope'")),
    unknown.join('\n'),
  );
  const mismatch = messages(shared + valid.replace(MOCK, '{ id: m, type: mocking, config_ref: gate-base }'));
  assert.ok(
    mismatch.some((m) => m.includes("'test-gate' config") && m.includes("'mocking'")),
    mismatch.join('\n'),
  );
});

test('config_ref: a local null overrides a shared value (falls back to the default)', () => {
  const rt = compile(
    shared +
      valid.replace(
        MOCK,
        '{ id: m, type: mocking, config_ref: mock-base, config: { response_status: null } }',
      ),
  );
  assert.ok(rt.policies.get('p'));
});

test('config_ref: shared configs cannot reference shared configs', () => {
  const msgs = messages(
    shared.replace('config: { status: 451 }', 'config: { status: 451, config_ref: mock-base }') + valid,
  );
  assert.ok(
    msgs.some((m) => m.includes('cannot reference other shared configs')),
    msgs.join('\n'),
  );
});

const supernode = `
supernodes:
  - name: guarded
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: blocked, type: output }
      - { id: error, type: error }
      - { id: auth, type: test-gate }
      - { id: tag, type: test-tag, config: { tag: inner } }
    edges:
      - { from: input.out, to: auth.in }
      - { from: auth.success, to: tag.in }
      - { from: tag.success, to: output.in }
      - { from: auth.denied, to: blocked.in }
`;

test('supernode: instance expands with namespaced inner ids and named output ports', () => {
  const rt = compile(
    supernode +
      `
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: guarded } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
      - { from: sec.blocked, to: out.in }
`,
  );
  const policy = rt.policies.get('p');
  assert.ok(policy?.nodes.has('sec/auth'));
  assert.ok(policy?.nodes.has('sec/tag'));
  assert.equal(policy?.entry?.id, 'sec/auth');
  assert.equal(policy?.nodes.get('sec/auth')?.next['denied']?.id, 'out');
  assert.equal(policy?.nodes.get('sec/tag')?.next['success']?.id, 'out');
});

test('supernode: an unwired named output boundary is rejected; the error boundary is optional', () => {
  const msgs = messages(
    supernode +
      `
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: guarded } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
`,
  );
  assert.ok(
    msgs.some((m) => m.includes("output port 'blocked' of supernode instance 'sec'")),
    msgs.join('\n'),
  );
});

test('supernode: unknown instance port uses the reference message', () => {
  const msgs = messages(
    supernode +
      `
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: guarded } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
      - { from: sec.blocked, to: out.in }
      - { from: sec.denied, to: out.in }
`,
  );
  assert.ok(
    msgs.some((m) =>
      m.startsWith(
        "policy 'p': unknown port 'denied' on supernode instance 'sec' — instances expose success (alias out) and error",
      ),
    ),
    msgs.join('\n'),
  );
});

test('supernode: nesting and unknown supernode names are rejected', () => {
  const nested = messages(
    supernode.replace(
      '      - { id: tag, type: test-tag, config: { tag: inner } }',
      '      - { id: tag, type: supernode, config: { name: guarded } }',
    ) + valid,
  );
  assert.ok(
    nested.some((m) => m.includes('cannot be nested')),
    nested.join('\n'),
  );
  const unknown = messages(valid.replace(MOCK, '{ id: m, type: supernode, config: { name: nope } }'));
  assert.ok(
    unknown.some((m) => m.includes("unknown supernode 'nope'")),
    unknown.join('\n'),
  );
});

test('streaming inference: a body-reading node downstream of a relaying node forces buffering', () => {
  const policy = (tag: string) => `
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: up, type: test-fetch }
      - { id: rw, type: test-tag, config: { tag: ${tag} } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: rw.in }
      - { from: rw.success, to: out.in }
`;
  const streaming = compile(policy('headers-only')).policies.get('p');
  assert.deepEqual(streaming?.streaming, ['up']);
  assert.deepEqual(streaming?.buffering, []);
  const buffered = compile(policy('reads-body')).policies.get('p');
  assert.deepEqual(buffered?.streaming, []);
  assert.deepEqual(buffered?.buffering, [{ upstream: 'up', blocked_by: 'rw' }]);
});
