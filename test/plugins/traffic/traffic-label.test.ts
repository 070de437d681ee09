import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { trafficLabel } from '../../../src/plugins/traffic/traffic-label.js';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import type { Origin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { startSlowOrigin } from '../streaming-probe.js';
import { assertConfigError, assertSchemaRejects, runNow, templatedEnv } from '../../support/node-run.js';

test('traffic-label: the first matching rule sets request headers and label.<key> message entries (legacy + {{…}})', () => {
  const node = instantiate(
    trafficLabel,
    {
      rules: [
        {
          match: [['arg_channel', '==', 'beta']],
          actions: [{ set_headers: { 'X-Server-Id': 'beta-$arg_channel' } }],
        },
        {
          actions: [
            { set_headers: { 'x-server-id': 'stable' }, set_labels: { tier: '{{request.method}}', n: 2 } },
          ],
        },
      ],
    },
    templatedEnv(),
  );
  const beta = requestContext({ url: '/?channel=beta' });
  assert.equal(runNow(node, beta), 'success');
  assert.equal(beta.request.headers['x-server-id'], 'beta-beta');
  assert.equal(beta.message['label.tier'], undefined, 'only the first matching rule applies');
  const other = requestContext();
  runNow(node, other);
  assert.equal(other.request.headers['x-server-id'], 'stable');
  assert.equal(other.message['label.tier'], 'GET');
  assert.equal(other.message['label.n'], '2');
});

test('traffic-label: actions are picked by weighted round-robin', () => {
  const node = instantiate(
    trafficLabel,
    {
      rules: [
        {
          actions: [
            { set_labels: { v: 'a' }, weight: 3 },
            { set_labels: { v: 'b' }, weight: 1 },
          ],
        },
      ],
    },
    templatedEnv(),
  );
  const counts: Record<string, number> = {};
  for (let i = 0; i < 400; i++) {
    const ctx = requestContext();
    runNow(node, ctx);
    const v = ctx.message['label.v'] as string;
    counts[v] = (counts[v] ?? 0) + 1;
  }
  assert.deepEqual(counts, { a: 300, b: 100 });
});

test('traffic-label: a weight-only action changes nothing and lets the next rule apply', () => {
  const node = instantiate(
    trafficLabel,
    { rules: [{ actions: [{ weight: 1 }] }, { actions: [{ set_headers: { 'x-fallback': '1' } }] }] },
    templatedEnv(),
  );
  const ctx = requestContext();
  runNow(node, ctx);
  assert.equal(ctx.request.headers['x-fallback'], '1');
});

test('traffic-label: no matching rule leaves the request unchanged', () => {
  const node = instantiate(
    trafficLabel,
    { rules: [{ match: [['http_x_beta', 'present']], actions: [{ set_headers: { 'x-b': '1' } }] }] },
    templatedEnv(),
  );
  const ctx = requestContext();
  runNow(node, ctx);
  assert.equal(ctx.request.headers['x-b'], undefined);
});

test('traffic-label: reads the response body only when a matcher (or a value) does', () => {
  const reads = (rules: unknown[]): boolean => trafficLabel.readsResponseBody!({ rules } as never);
  assert.equal(
    reads([{ match: [['http_x', '==', '1']], actions: [{ set_headers: { a: 'b' }, weight: 1 }] }]),
    false,
  );
  assert.equal(reads([{ match: [['response_body:$.beta', '==', true]], actions: [{ weight: 1 }] }]), true);
  assert.equal(reads([{ actions: [{ set_labels: { body: '$resp_body' }, weight: 1 }] }]), true);
});

test('traffic-label: config rejections', () => {
  assertSchemaRejects(() => instantiate(trafficLabel, { rules: [] }), 'rules');
  assertSchemaRejects(() => instantiate(trafficLabel, { rules: [{ actions: [] }] }), 'rules[0].actions');
  assertSchemaRejects(
    () => instantiate(trafficLabel, { rules: [{ actions: [{ weight: 0 }] }] }),
    'rules[0].actions[0].weight',
  );
  assertSchemaRejects(
    () => instantiate(trafficLabel, { rules: [{ actions: [{ set_body: 'x' }] }] }),
    'rules[0].actions[0].set_body',
  );
  assertConfigError(
    () =>
      instantiate(
        trafficLabel,
        { rules: [{ match: ['uri', '==', '/'], actions: [{ weight: 1 }] }] },
        templatedEnv(),
      ),
    'rules[0].match',
  );
});

const harnesses: AdminHarness[] = [];
const origins: Origin[] = [];
after(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

function policy(name: string, port: number, match: unknown[]) {
  return {
    name,
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } },
      {
        id: 'label',
        type: 'traffic-label',
        config: { rules: [{ match, actions: [{ set_labels: { seen: 'yes' } }] }] },
      },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'up.in' },
      { from: 'up.success', to: 'label.in' },
      { from: 'label.success', to: 'out.in' },
    ],
  };
}

test('traffic-label: E2E-STREAM — a header matcher keeps the upstream streaming, a response-body matcher buffers it', async () => {
  const slow = await startSlowOrigin();
  origins.push(slow.origin);
  const streaming = policy('tl-stream', slow.origin.port, [['http_x_beta', '!', 'present']]);
  const buffering = policy('tl-buffer', slow.origin.port, [['resp_body', '~~', 'one']]);
  const h = await startAdmin({
    gatewayYaml: `
routes:
  - { name: s, match: { path: /s }, policy: tl-stream }
  - { name: b, match: { path: /b }, policy: tl-buffer }
policies: ${JSON.stringify([streaming, buffering])}
`,
  });
  harnesses.push(h);
  const kept = await read(await h.call('POST', '/api/policies/validate', streaming));
  assert.deepEqual((kept.body as { buffering: unknown[] }).buffering, []);
  const blocked = await read(await h.call('POST', '/api/policies/validate', buffering));
  assert.deepEqual((blocked.body as { buffering: unknown[] }).buffering, [
    { upstream: 'up', blocked_by: 'label' },
  ]);
  assert.equal((await slow.probe(`${h.data}/s`)).streamed, true);
  const buffered = await slow.probe(`${h.data}/b`);
  assert.equal(buffered.streamed, false);
  assert.equal(buffered.body, 'data: one\n\ndata: two\n\n');
});
