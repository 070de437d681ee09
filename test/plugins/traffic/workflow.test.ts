import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { workflow } from '../../../src/plugins/traffic/workflow.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  assertConfigError,
  assertSchemaRejects,
  bodyText,
  runNow,
  templatedEnv,
} from '../../support/node-run.js';

const flow = (rules: unknown[], nodeId = 'flow') =>
  instantiate(workflow, { rules }, templatedEnv({ nodeId }));
const to = (path: string, headers: Record<string, string> = {}) =>
  requestContext({ url: path, headers: { host: 'h', ...headers } });

test('workflow: a matching return rule leaves on denied with its code and error_msg', () => {
  const node = flow([{ case: [['uri', '==', '/admin']], actions: [['return', { code: 403 }]] }]);
  const ctx = to('/admin');
  assert.equal(runNow(node, ctx), 'denied');
  assert.equal(ctx.response.status, 403);
  assert.deepEqual(JSON.parse(bodyText(ctx)), { error_msg: 'rejected by workflow' });
  assert.equal(runNow(node, to('/public')), 'success', 'no rule matched');
});

test('workflow: rules apply in order and only the first matching one; a rule without case always matches', () => {
  const node = flow([
    { case: [['uri', '==', '/a']], actions: [['return', { code: 401 }]] },
    { actions: [['return', { code: 418 }]] },
  ]);
  const a = to('/a');
  runNow(node, a);
  assert.equal(a.response.status, 401);
  const other = to('/b');
  runNow(node, other);
  assert.equal(other.response.status, 418);
});

test('workflow: a limit-count action counts per rule and leaves on limited with rejected_code', () => {
  const node = flow([
    {
      case: [['http_x_tier', '==', 'free']],
      actions: [['limit-count', { count: 1, time_window: 60, rejected_code: 429, rejected_msg: 'upgrade' }]],
    },
    { actions: [['limit-count', { count: 2, time_window: 60 }]] },
  ]);
  const free = () => to('/', { 'x-tier': 'free' });
  const first = free();
  assert.equal(runNow(node, first), 'success');
  assert.equal(first.response.headers['x-ratelimit-limit'], '1');
  assert.equal(first.response.headers['x-ratelimit-remaining'], '0');
  const over = free();
  assert.equal(runNow(node, over), 'limited');
  assert.equal(over.response.status, 429);
  assert.deepEqual(JSON.parse(bodyText(over)), { error_msg: 'upgrade' });
  // The second rule has its own counter.
  assert.equal(runNow(node, to('/')), 'success');
  assert.equal(runNow(node, to('/')), 'success');
  const paid = to('/');
  assert.equal(runNow(node, paid), 'limited');
  assert.equal(paid.response.status, 503, 'the default rejected_code');
  assert.equal(bodyText(paid), '', 'no rejected_msg: an empty body');
});

test('workflow: the nested limit-count key is a legacy $var field', () => {
  const node = flow([{ actions: [['limit-count', { count: 1, time_window: 60, key: '$arg_user' }]] }]);
  assert.equal(runNow(node, to('/?user=a')), 'success');
  assert.equal(runNow(node, to('/?user=b')), 'success');
  assert.equal(runNow(node, to('/?user=a')), 'limited');
});

test('workflow: only the first action applies; the rest are reported', () => {
  const env = templatedEnv();
  const node = instantiate(
    workflow,
    {
      rules: [
        {
          actions: [
            ['return', { code: 409 }],
            ['return', { code: 410 }],
          ],
        },
      ],
    },
    env,
  );
  const ctx = to('/');
  runNow(node, ctx);
  assert.equal(ctx.response.status, 409);
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['rules[0].actions'],
  );
});

test('workflow: config rejections', () => {
  assertSchemaRejects(() => flow([]), 'rules');
  assertSchemaRejects(() => flow([{ case: [] }]), 'rules[0].actions');
  assertConfigError(() => flow([{ actions: [['limit-conn', {}]] }]), 'rules[0].actions[0][0]', /limit-conn/);
  assertConfigError(() => flow([{ actions: [['return', {}]] }]), 'rules[0].actions[0][1].code');
  assertConfigError(() => flow([{ actions: [['return', { code: 99 }]] }]), 'rules[0].actions[0][1].code');
  assertConfigError(
    () => flow([{ actions: [['limit-count', { count: 1 }]] }]),
    'rules[0].actions[0][1].time_window',
  );
  assertConfigError(
    () => flow([{ actions: [['limit-count', { count: 1, time_window: 1, group: 'g' }]] }]),
    'rules[0].actions[0][1].group',
  );
  assertConfigError(
    () => flow([{ actions: [['limit-count', { count: 1, time_window: 1, policy: 'redis' }]] }]),
    'rules[0].actions[0][1].store',
  );
  assertConfigError(
    () => flow([{ case: [['uri', 'bogus', 1]], actions: [['return', { code: 403 }]] }]),
    'rules[0].case[0][1]',
  );
});

const gateways: RunningGateway[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
});

test('workflow: end to end denied and limited reach the client', async () => {
  const gw = await startGateway(`
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - id: flow
        type: workflow
        config:
          rules:
            - { case: [["uri", "==", "/blocked"]], actions: [["return", { code: 403 }]] }
            - { actions: [["limit-count", { count: 1, time_window: 60, rejected_code: 429 }]] }
      - { id: ok, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: flow.in }
      - { from: flow.success, to: ok.in }
      - { from: flow.denied, to: client.in }
      - { from: flow.limited, to: client.in }
      - { from: ok.success, to: client.in }
`);
  gateways.push(gw);
  const blocked = await request(`${gw.url}/blocked`);
  assert.equal(blocked.status, 403);
  assert.deepEqual(JSON.parse(blocked.body), { error_msg: 'rejected by workflow' });
  assert.equal((await request(`${gw.url}/x`)).status, 200);
  assert.equal((await request(`${gw.url}/x`)).status, 429);
});
