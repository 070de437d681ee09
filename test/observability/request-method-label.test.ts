/**
 * `gateway_request_duration_seconds` carries a bounded `method` label
 * (docs/metrics.md): the standard methods by name, anything else as OTHER.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../support/in-process.js';
import { echo, startOrigin, type Origin } from '../support/origins.js';

let origin: Origin;
before(async () => {
  origin = await startOrigin(echo('origin'));
});
after(async () => {
  await origin.close();
});

const yaml = (): string => `
routes:
  - { name: api, match: { path: /api/* }, policy: api-policy }
policies:
  - name: api-policy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`;

/** Every `gateway_request_duration_seconds_count` sample of the api route: method → count. */
function countsByMethod(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^gateway_request_duration_seconds_count\{(.*)\} (\S+)$/.exec(line);
    if (m === null || !m[1]!.includes('route="api"')) continue;
    const method = /method="([^"]*)"/.exec(m[1]!)?.[1] ?? '(none)';
    out.set(method, (out.get(method) ?? 0) + Number(m[2]));
  }
  return out;
}

test('metrics: request latency is labelled by method; a non-standard method counts as OTHER', async () => {
  const gw = await startGateway(yaml());
  try {
    for (let i = 0; i < 2; i++) assert.equal((await fetch(`${gw.url}/api/a`)).status, 200);
    const post = await fetch(`${gw.url}/api/a`, { method: 'POST', body: 'x' });
    assert.equal(post.status, 200);
    await post.arrayBuffer();
    for (const method of ['PURGE', 'PROPFIND']) {
      const res = await fetch(`${gw.url}/api/a`, { method });
      assert.equal(res.status, 200, method);
      await res.arrayBuffer();
    }
    const text = (await gw.gateway.metrics.render()).body;
    assert.deepEqual(
      Object.fromEntries(countsByMethod(text)),
      { GET: 2, POST: 1, OTHER: 2 },
      'one series per standard method, the rest folded into OTHER',
    );
    assert.match(
      text,
      /gateway_request_duration_seconds_bucket\{[^}]*method="POST"[^}]*status_class="2xx"[^}]*le="\+Inf"\} 1/,
    );
  } finally {
    await gw.stop();
  }
});
