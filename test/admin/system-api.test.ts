import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { registry } from '../../src/plugins/index.js';
import { BASE_YAML, getText, mockPolicyYaml, read, startAdmin } from './harness.js';

interface CatalogEntry {
  type: string;
  description: string;
  category: string;
  ports: { input: string | null; outputs: { name: string; kind: string; description: string }[] };
  schema: Record<string, unknown>;
  templated: string[];
}

test('admin plugins: E2E-API-04 GET /api/plugins returns every registered type with ports, schema and templated', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(await h.call('GET', '/api/plugins'));
    assert.equal(status, 200);
    const plugins = (body as { plugins: CatalogEntry[] }).plugins;
    assert.deepEqual(plugins.map((p) => p.type).sort(), [...registry.keys()].sort());
    for (const p of plugins) {
      assert.ok(p.description.length > 0, p.type);
      assert.ok(p.category.length > 0, p.type);
      assert.equal(typeof p.schema, 'object', p.type);
      assert.ok(Array.isArray(p.templated), p.type);
      for (const port of p.ports.outputs) {
        assert.ok(['success', 'outcome', 'error'].includes(port.kind), `${p.type}.${port.name}`);
        assert.ok(port.description.length > 0, `${p.type}.${port.name}`);
      }
    }
    const byType = new Map(plugins.map((p) => [p.type, p]));
    assert.deepEqual(byType.get('listener')?.ports, {
      input: null,
      outputs: [{ name: 'success', kind: 'success', description: 'Entry into the policy pipeline.' }],
    });
    assert.deepEqual(byType.get('client')?.ports, {
      input: 'Final context; the response is sent to the client.',
      outputs: [],
    });
    assert.deepEqual(byType.get('mocking')?.ports, {
      input: 'Request context from the previous node.',
      outputs: [
        {
          name: 'success',
          kind: 'success',
          description: 'The node completed normally; the request continues.',
        },
        {
          name: 'error',
          kind: 'error',
          description: 'The node failed (configuration, parse, or infrastructure error).',
        },
      ],
    });
    assert.ok(byType.get('mocking')?.templated.includes('response_example'));
    assert.ok((byType.get('mocking')?.schema['properties'] as Record<string, unknown>)['response_example']);
  } finally {
    await h.stop();
  }
});

test('admin status: version from package.json, resource counts and uptime', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(await h.call('GET', '/api/status'));
    assert.equal(status, 200);
    const b = body as Record<string, unknown>;
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(b['version'], pkg.version);
    assert.equal(b['routes'], 1);
    assert.equal(b['policies'], 1);
    assert.equal(b['supernodes'], 0);
    assert.equal(typeof b['uptime_seconds'], 'number');
  } finally {
    await h.stop();
  }
});

test('admin export: E2E-API-12 text/yaml of the stored config with placeholders, config_ref and supernode instances', async () => {
  const yaml = `
routes:
  - { name: r, match: { path: "\${ROUTE_PATH:-/r}" }, policy: p }
supernodes:
  - name: answer
    nodes:
      - { id: input, type: input }
      - { id: output, type: output }
      - { id: m, type: mocking, config_ref: shared }
    edges:
      - { from: input.out, to: m.in }
      - { from: m.success, to: output.in }
plugin_configs:
  - { name: shared, type: mocking, config: { response_example: "\${GREETING:-hi}" } }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: sec, type: supernode, config: { name: answer } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: sec.in }
      - { from: sec.success, to: out.in }
`;
  const h = await startAdmin({ gatewayYaml: yaml, env: { GREETING: 'resolved-value' } });
  try {
    const anonymous = await fetch(`${h.url}/api/config/export`);
    assert.equal(anonymous.status, 401);
    const res = await h.call('GET', '/api/config/export');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/yaml/);
    const text = await res.text();
    assert.doesNotMatch(text, /resolved-value/);
    const doc = parse(text) as Record<string, { name: string; [k: string]: unknown }[]>;
    assert.equal((doc['routes']?.[0]?.['match'] as { path: string }).path, '${ROUTE_PATH:-/r}');
    assert.equal(
      (doc['plugin_configs']?.[0]?.['config'] as { response_example: string }).response_example,
      '${GREETING:-hi}',
    );
    const nodes = doc['policies']?.[0]?.['nodes'] as { id: string; type: string; config?: unknown }[];
    assert.deepEqual(nodes[1], { id: 'sec', type: 'supernode', config: { name: 'answer' } });
    const inner = doc['supernodes']?.[0]?.['nodes'] as { id: string; config_ref?: string }[];
    assert.equal(inner[2]?.config_ref, 'shared');
  } finally {
    await h.stop();
  }
});

test('admin reload: re-reads gateway.yaml (200); a broken file → 500 with the errors, old config serving', async () => {
  const h = await startAdmin({ onDisk: true, system: 'config: { persist: false }' });
  try {
    const file = h.file as string;
    writeFileSync(file, BASE_YAML.replace("response_example: 'hello'", "response_example: 'reloaded'"));
    const ok = await read(await h.call('POST', '/api/config/reload'));
    assert.equal(ok.status, 200);
    assert.equal((ok.body as { status: string }).status, 'reloaded');
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'reloaded' });

    writeFileSync(file, 'routes: [ { name: x\n');
    const parseFail = await read(await h.call('POST', '/api/config/reload'));
    assert.equal(parseFail.status, 500);
    assert.match((parseFail.body as { error: string }).error, /invalid YAML/);

    writeFileSync(file, 'routes:\n  - { name: x, match: { path: /x }, policy: missing }\n');
    const compileFail = await read(await h.call('POST', '/api/config/reload'));
    assert.equal(compileFail.status, 500);
    const b = compileFail.body as { error: string; details: { path: string }[] };
    assert.match(b.error, /unknown policy 'missing'/);
    assert.deepEqual(
      b.details.map((d) => d.path),
      ['routes[0].policy'],
    );
    assert.deepEqual(await getText(`${h.data}/hello`), { status: 200, text: 'reloaded' });
  } finally {
    await h.stop();
  }
});

test('admin reload: without a gateway.yaml path → 500', async () => {
  const h = await startAdmin();
  try {
    const { status, body } = await read(await h.call('POST', '/api/config/reload'));
    assert.equal(status, 500);
    assert.match((body as { error: string }).error, /no gateway config path/);
  } finally {
    await h.stop();
  }
});

test('admin probes: /healthz 200 and /readyz 503 while the route table is empty, 200 once a route exists', async () => {
  const h = await startAdmin({ gatewayYaml: `routes: []\npolicies:${mockPolicyYaml('p', 'x')}` });
  try {
    assert.deepEqual(await read(await fetch(`${h.url}/healthz`)), { status: 200, body: { status: 'ok' } });
    const empty = await read(await fetch(`${h.url}/readyz`));
    assert.equal(empty.status, 503);
    assert.equal((empty.body as { status: string }).status, 'not_ready');
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'r', match: { path: '/r' }, policy: 'p' })).status,
      201,
    );
    assert.deepEqual(await read(await fetch(`${h.url}/readyz`)), { status: 200, body: { status: 'ready' } });
    const head = await fetch(`${h.url}/healthz`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  } finally {
    await h.stop();
  }
});

/** The value of one sample line of a Prometheus exposition, or 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = (m[2] ?? '').split(',').sort();
    if (want.every((w) => got.includes(w)) && got.length === want.length) return Number(m[3]);
  }
  return 0;
}

test('admin metrics: E2E-API-10 /metrics is Prometheus text behind auth; E2E-DP-10 the per-route counter increments', async () => {
  const h = await startAdmin();
  try {
    assert.equal((await fetch(`${h.url}/metrics`)).status, 401);
    const before = await h.call('GET', '/metrics');
    assert.equal(before.status, 200);
    assert.match(before.headers.get('content-type') ?? '', /^text\/plain/);
    const base = sample(await before.text(), 'gateway_requests_total', { route: 'hello', status: '200' });
    for (let i = 0; i < 3; i++) assert.equal((await getText(`${h.data}/hello`)).status, 200);
    assert.equal((await getText(`${h.data}/nowhere`)).status, 404);
    const text = await (await h.call('GET', '/metrics')).text();
    assert.equal(sample(text, 'gateway_requests_total', { route: 'hello', status: '200' }), base + 3);
    assert.equal(sample(text, 'gateway_requests_total', { route: '', status: '404' }), 1);
    assert.equal(
      sample(text, 'gateway_request_duration_seconds_count', {
        route: 'hello',
        policy: 'hello-policy',
        status_class: '2xx',
        method: 'GET',
      }),
      3,
    );
    assert.equal(sample(text, 'gateway_request_errors_total', { route: 'hello' }), 0);
    assert.equal(sample(text, 'gateway_config_applies_total', { source: 'startup' }), 1);
    for (const name of [
      'gateway_node_errors_total',
      'gateway_upstream_errors_total',
      'gateway_config_rejections_total',
    ]) {
      assert.match(text, new RegExp(`# TYPE ${name} counter`));
    }
  } finally {
    await h.stop();
  }
});

test('admin metrics: applies and rejections are counted per source', async () => {
  const h = await startAdmin();
  try {
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'a', match: { path: '/a' }, policy: 'hello-policy' }))
        .status,
      201,
    );
    assert.equal(
      (await h.call('POST', '/api/routes', { name: 'b', match: { path: '/b' }, policy: 'nope' })).status,
      400,
    );
    assert.equal((await h.call('POST', '/api/routes', { name: 'c' })).status, 400);
    const text = await (await h.call('GET', '/metrics')).text();
    assert.equal(sample(text, 'gateway_config_applies_total', { source: 'admin' }), 1);
    assert.equal(sample(text, 'gateway_config_rejections_total', { source: 'admin' }), 2);
  } finally {
    await h.stop();
  }
});

test('admin metrics: a failing upstream counts a node error, an upstream error and a request error', async (t) => {
  if (!registry.has('upstream')) {
    t.skip('the upstream node type is not registered in this tree');
    return;
  }
  const { freePort } = await import('../support/free-port.js');
  const dead = await freePort();
  const yaml = `
routes:
  - { name: dead, match: { path: /dead }, policy: dead-policy }
policies:
  - name: dead-policy
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${dead} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;
  const h = await startAdmin({ gatewayYaml: yaml });
  try {
    const res = await getText(`${h.data}/dead`);
    assert.ok(res.status >= 500, String(res.status));
    const text = await (await h.call('GET', '/metrics')).text();
    assert.equal(sample(text, 'gateway_node_errors_total', { policy: 'dead-policy', node_id: 'up' }), 1);
    assert.equal(
      sample(text, 'gateway_upstream_errors_total', {
        policy: 'dead-policy',
        node_id: 'up',
        code: 'UPSTREAM_CONNECTION_ERROR',
      }),
      1,
    );
    assert.equal(sample(text, 'gateway_request_errors_total', { route: 'dead' }), 1);
  } finally {
    await h.stop();
  }
});

test('admin vars: /api/vars lists the variable catalog and /api/env-vars names only, sorted', async () => {
  const h = await startAdmin({ env: { ZED_SECRET: 'do-not-show', ALPHA: '1' } });
  try {
    const vars = await read(await h.call('GET', '/api/vars'));
    assert.equal(vars.status, 200);
    const list = (vars.body as { vars: { name: string; kind: string }[] }).vars;
    assert.ok(list.length > 5);
    assert.ok(list.every((v) => v.kind === 'static' || v.kind === 'family'));
    const res = await h.call('GET', '/api/env-vars');
    const text = await res.text();
    assert.doesNotMatch(text, /do-not-show/);
    const names = (JSON.parse(text) as { names: string[] }).names;
    assert.deepEqual(names, ['ALPHA', 'ZED_SECRET']);
  } finally {
    await h.stop();
  }
});
