import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adminCall, cliConfig, startCli, type CliConfig } from '../admin/cli-harness.js';
import { BASE_YAML } from '../admin/harness.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { REDOS_RULE, redosPath } from '../support/redos.js';

// Security review M3, replayed against a real `switchyard` process: a uri-blocker rule
// with nested quantifiers, put through the Admin API, then one crafted request.
let config: CliConfig;
let gateway: GatewayProcess;

before(async () => {
  config = await cliConfig(BASE_YAML);
  gateway = await startCli(config);
});

after(async () => {
  await gateway.stop();
  config.remove();
});

const blockerPolicy = (rule: string) => ({
  nodes: [
    { id: 'in', type: 'listener' },
    { id: 'b', type: 'uri-blocker', config: { block_rules: [rule] } },
    { id: 'm', type: 'mocking', config: { response_status: 200, response_example: 'ok' } },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'b.in' },
    { from: 'b.success', to: 'm.in' },
    { from: 'b.denied', to: 'out.in' },
    { from: 'm.success', to: 'out.in' },
  ],
});

/** Status and time of one data-plane GET. */
async function timedGet(path: string): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  const res = await fetch(`${config.data}${path}`);
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - start };
}

test('config regex e2e: M3 a rule the linear-time engine cannot run is refused by PUT with 400 naming the key', async () => {
  const res = await adminCall(
    config,
    'PUT',
    '/api/policies/redos-backref',
    blockerPolicy('^/redos/(a+)\\1$'),
  );
  assert.equal(res.status, 400);
  const text = await res.text();
  assert.match(text, /block_rules\[0\]/);
  assert.match(text, /backreference/);
  assert.equal((await adminCall(config, 'GET', '/api/policies/redos-backref')).status, 404);
});

test("config regex e2e: M3 the review's ^/redos/(a+)+$ rule cannot stall the gateway (was 13.7 s)", async () => {
  const put = await adminCall(config, 'PUT', '/api/policies/redos', blockerPolicy(REDOS_RULE));
  assert.ok(put.ok, `PUT answered ${put.status}: ${await put.text()}`);
  const route = { name: 'redos', match: { path: '/redos/*' }, policy: 'redos' };
  assert.equal((await adminCall(config, 'POST', '/api/routes', route)).status, 201);
  assert.equal((await timedGet('/redos/aaaa')).status, 403, 'the rule still blocks what it matches');

  // The attack and a control request side by side: neither waits on the other.
  const [attack, control] = await Promise.all([timedGet(redosPath(31)), timedGet('/hello')]);
  assert.equal(attack.status, 200);
  assert.equal(control.status, 200);
  assert.ok(attack.ms < 2000, `attack answered in ${attack.ms.toFixed(0)} ms`);
  assert.ok(control.ms < 2000, `control answered in ${control.ms.toFixed(0)} ms`);

  // Linear, not merely faster: 4 000 a's would take longer than the universe has on a backtracking engine.
  const long = await timedGet(redosPath(4000));
  assert.equal(long.status, 200);
  assert.ok(long.ms < 2000, `4 000 a's answered in ${long.ms.toFixed(0)} ms`);
});
