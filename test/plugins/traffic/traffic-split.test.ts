import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { trafficSplit } from '../../../src/plugins/traffic/traffic-split.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { deadPort, echo, startOrigin, type Origin } from '../../support/origins.js';
import { createGatewayScope } from '../../../src/observability/gateway-scope.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, bodyText, failsWith } from '../../support/node-run.js';

const origins: Origin[] = [];
const nodes: NodeInstance[] = [];
const gateways: RunningGateway[] = [];
after(async () => {
  for (const n of nodes) await n.close?.();
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(origins.map((o) => o.close()));
  await closeAllPools();
});

async function origin(name: string): Promise<Origin> {
  const o = await startOrigin(echo(name), { name });
  origins.push(o);
  return o;
}

function split(config: Record<string, unknown>): NodeInstance<'success' | 'routed'> {
  const node = instantiate(trafficSplit, config);
  nodes.push(node);
  return node;
}

test('traffic-split: a target slot proxies the request itself and leaves on routed with the response', async () => {
  const canary = await origin('canary');
  const node = split({ rules: [{ weighted_upstreams: [{ upstream: { targets: [canary.target] } }] }] });
  const ctx = requestContext({ method: 'POST', url: '/orders?x=1', body: Buffer.from('payload') });
  assert.equal(await node.run(ctx), 'routed');
  assert.equal(ctx.response.status, 200);
  assert.equal(ctx.response.headers['x-origin'], 'canary');
  const seen = JSON.parse(bodyText(ctx)) as {
    method: string;
    url: string;
    body: string;
    headers: Record<string, string>;
  };
  assert.equal(seen.method, 'POST');
  assert.equal(seen.url, '/orders?x=1');
  assert.equal(seen.body, 'payload');
  assert.equal(seen.headers.host, `127.0.0.1:${canary.port}`);
});

test('traffic-split: no matching rule, or the default slot, continues on success without proxying', async () => {
  const canary = await origin('canary-2');
  const node = split({
    rules: [
      {
        match: [['http_x_canary', '==', '1']],
        weighted_upstreams: [{ upstream: { targets: [canary.target] } }],
      },
    ],
  });
  assert.equal(node.run(requestContext()), 'success');
  const defaults = split({ rules: [{ weighted_upstreams: [{ weight: 1 }] }] });
  assert.equal(defaults.run(requestContext()), 'success');
  assert.equal(canary.requests.length, 0);
  const ctx = requestContext({ headers: { host: 'h', 'x-canary': '1' } });
  assert.equal(await node.run(ctx), 'routed');
});

test('traffic-split: weights split traffic between the default slot and targets (weighted round-robin)', async () => {
  const canary = await origin('canary-3');
  const node = split({
    rules: [
      {
        weighted_upstreams: [
          { weight: 3 },
          { weight: 1, upstream: { targets: [canary.target] } },
          { weight: 0, upstream: { targets: [canary.target] } },
        ],
      },
    ],
  });
  const ports: string[] = [];
  for (let i = 0; i < 40; i++) ports.push(await node.run(requestContext()));
  assert.equal(ports.filter((p) => p === 'routed').length, 10);
  assert.equal(ports.filter((p) => p === 'success').length, 30);
});

test('traffic-split: 90/10 interleaves the canary: never two in a row, one in every ten', async () => {
  const canary = await origin('canary-smooth');
  const node = split({
    rules: [{ weighted_upstreams: [{ weight: 90 }, { weight: 10, upstream: { targets: [canary.target] } }] }],
  });
  const ports: string[] = [];
  for (let i = 0; i < 100; i++) ports.push(await node.run(requestContext()));
  assert.equal(ports.filter((p) => p === 'routed').length, 10);
  for (let i = 0; i < 100; i += 10) {
    assert.equal(ports.slice(i, i + 10).filter((p) => p === 'routed').length, 1, `requests ${i}–${i + 9}`);
  }
  assert.ok(!ports.some((p, i) => p === 'routed' && ports[i + 1] === 'routed'));
});

test('traffic-split: a reload that keeps the rule keeps its place; changed weights start afresh', async () => {
  const canary = await origin('canary-reload');
  const scope = createGatewayScope();
  const env = () => pluginEnv({ scope, policy: 'reload-policy', nodeId: 'split' });
  const config = (canaryWeight: number) => ({
    rules: [
      {
        weighted_upstreams: [{ weight: 1 }, { weight: canaryWeight, upstream: { targets: [canary.target] } }],
      },
    ],
  });
  const build = (canaryWeight: number) => {
    const node = instantiate(trafficSplit, config(canaryWeight), env());
    nodes.push(node);
    return node;
  };
  // One request per "reload": with the place kept, 1/1 alternates; restarted, it would repeat one slot.
  const seen: string[] = [];
  for (let i = 0; i < 6; i++) seen.push(await build(1).run(requestContext()));
  assert.deepEqual(
    seen.slice(1),
    seen.slice(0, 5).map((p) => (p === 'routed' ? 'success' : 'routed')),
  );
  const changed = build(3);
  const after: string[] = [];
  for (let i = 0; i < 4; i++) after.push(await changed.run(requestContext()));
  assert.equal(after.filter((p) => p === 'routed').length, 3);
});

test('traffic-split: targets of one slot are used round-robin', async () => {
  const a = await origin('a');
  const b = await origin('b');
  const node = split({ rules: [{ weighted_upstreams: [{ upstream: { targets: [a.target, b.target] } }] }] });
  for (let i = 0; i < 4; i++) await node.run(requestContext());
  assert.equal(a.requests.length, 2);
  assert.equal(b.requests.length, 2);
});

test("traffic-split: a refused connection is retried on the slot's other target", async () => {
  const live = await origin('live');
  const port = await deadPort();
  const node = split({
    rules: [{ weighted_upstreams: [{ upstream: { targets: [{ host: '127.0.0.1', port }, live.target] } }] }],
  });
  for (let i = 0; i < 2; i++) {
    const ctx = requestContext();
    assert.equal(await node.run(ctx), 'routed');
    assert.equal(ctx.response.headers['x-origin'], 'live');
  }
});

test('traffic-split: an unreachable target → 502 TRAFFIC_SPLIT_UPSTREAM_ERROR', async () => {
  const port = await deadPort();
  const node = split({
    rules: [{ weighted_upstreams: [{ upstream: { targets: [{ host: '127.0.0.1', port }] } }] }],
  });
  const err = await failsWith(node, requestContext(), 'TRAFFIC_SPLIT_UPSTREAM_ERROR', 502);
  assert.equal(err.error, 'bad_gateway');
  assert.equal(err.message, 'traffic-split target unreachable');
  assert.equal(err.metadata.target, `127.0.0.1:${port}`);
  assert.equal(err.metadata.upstream_code, 'UPSTREAM_CONNECTION_ERROR');
});

test('traffic-split: config rejections', () => {
  assertSchemaRejects(() => instantiate(trafficSplit, {}), 'rules');
  assertSchemaRejects(
    () => instantiate(trafficSplit, { rules: [{ weighted_upstreams: [] }] }),
    'rules[0].weighted_upstreams',
  );
  assertSchemaRejects(
    () => instantiate(trafficSplit, { rules: [{ weighted_upstreams: [{ upstream: { targets: [] } }] }] }),
    'rules[0].weighted_upstreams[0].upstream.targets',
  );
  assertConfigError(
    () => instantiate(trafficSplit, { rules: [{ weighted_upstreams: [{ weight: 0 }] }] }),
    'rules[0].weighted_upstreams',
    /weight > 0/,
  );
  assertConfigError(
    () =>
      instantiate(trafficSplit, {
        rules: [{ match: [['uri', 'nope', 1]], weighted_upstreams: [{ weight: 1 }] }],
      }),
    'rules[0].match[0][1]',
  );
});

test('traffic-split: end to end — canary header goes to the split target, the rest to the normal upstream', async () => {
  const stable = await origin('stable');
  const canary = await origin('canary-e2e');
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: split
        type: traffic-split
        config:
          rules:
            - match: [["http_x_canary", "==", "1"]]
              weighted_upstreams:
                - upstream: { targets: [{ host: 127.0.0.1, port: ${canary.port} }] }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${stable.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: split.in }
      - { from: split.routed, to: client.in }
      - { from: split.success, to: up.in }
      - { from: up.success, to: client.in }
`);
  gateways.push(gw);
  assert.equal(
    (await request(`${gw.url}/a`, { headers: { 'x-canary': '1' } })).headers['x-origin'],
    'canary-e2e',
  );
  assert.equal((await request(`${gw.url}/a`)).headers['x-origin'], 'stable');
});
