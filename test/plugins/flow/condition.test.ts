import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { condition } from '../../../src/plugins/flow/condition.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { request } from '../../support/http.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, runNow } from '../../support/node-run.js';

test('condition: true port when the expression holds, false otherwise; nothing is changed', () => {
  const node = instantiate(condition, {
    conditions: [
      ['http_x_tier', '==', 'premium'],
      ['OR', ['arg_beta', '==', '1'], ['$.user.vip', '==', true]],
    ],
  });
  const yes = requestContext({ url: '/?beta=1', headers: { host: 'h', 'x-tier': 'premium' } });
  assert.equal(runNow(node, yes), 'true');
  assert.equal(yes.response.status, 0);
  const body = requestContext({
    method: 'POST',
    headers: { host: 'h', 'x-tier': 'premium' },
    body: Buffer.from('{"user":{"vip":true}}'),
  });
  assert.equal(runNow(node, body), 'true');
  const no = requestContext({ headers: { host: 'h', 'x-tier': 'basic' } });
  assert.equal(runNow(node, no), 'false');
});

test('condition: lenient evaluation — an absent variable is empty, JSONPath over a non-JSON body matches nothing', () => {
  const node = instantiate(condition, {
    conditions: [
      ['arg_missing', '!=', 'x'],
      ['$.a', 'absent'],
    ],
  });
  assert.equal(runNow(node, requestContext({ body: Buffer.from('not json') })), 'true');
});

test('condition: reads the response body only for response_body subjects', () => {
  const reads = (conditions: unknown[]): boolean => condition.readsResponseBody!({ conditions });
  assert.equal(reads([['status', '==', 200]]), false);
  assert.equal(reads([['$.user', 'present']]), false);
  assert.equal(reads([['response_body:$.ok', '==', true]]), true);
});

test('condition: config rejections', () => {
  assertSchemaRejects(() => instantiate(condition, {}), 'conditions');
  assertSchemaRejects(() => instantiate(condition, { conditions: [] }), 'conditions');
  assertConfigError(() => instantiate(condition, { conditions: ['uri', '==', '/'] }), 'conditions');
  assertConfigError(() => instantiate(condition, { conditions: [['uri', '~~', '(']] }), 'conditions[0][2]');
});

const gateways: RunningGateway[] = [];
after(() => Promise.all(gateways.map((g) => g.stop())));

test('condition: end to end the request leaves on true or false, and both ports must be wired', async () => {
  const policy = (wireFalse: boolean) => `
routes:
  - { name: r, match: { path: /* }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: tier, type: condition, config: { conditions: [["http_x_tier", "==", "premium"]] } }
      - { id: premium, type: mocking, config: { response_example: premium, content_type: text/plain } }
      - { id: standard, type: mocking, config: { response_example: standard, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: tier.in }
      - { from: tier.true, to: premium.in }
${wireFalse ? '      - { from: tier.false, to: standard.in }' : ''}
      - { from: premium.success, to: client.in }
      - { from: standard.success, to: client.in }
`;
  await assert.rejects(startGateway(policy(false)), /'false'.*must be wired/);
  const gw = await startGateway(policy(true));
  gateways.push(gw);
  assert.equal((await request(`${gw.url}/`, { headers: { 'x-tier': 'premium' } })).body, 'premium');
  assert.equal((await request(`${gw.url}/`)).body, 'standard');
});
