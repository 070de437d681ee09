/** gateway_node_duration_seconds: a run-time histogram per node, as the editor's metrics overlay reads it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../support/in-process.js';
import { startOrigin } from '../support/origins.js';
import { request } from '../support/http.js';

const DELAY_MS = 120;

/** The samples of one series by label text: `{le → value}` for buckets, or the single value. */
function series(text: string, name: string, nodeId: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) || !line.includes(`node_id="${nodeId}"`)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1] ?? '';
    out.set(le, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

test('node histogram: every node run lands in one bucket — cumulative, +Inf equals the run count, the sum equals the total time, and a node never looks faster than it can be', async () => {
  const origin = await startOrigin(async (_req, res) => {
    await new Promise((resolve) => setTimeout(resolve, DELAY_MS));
    res.end('late');
  });
  const gw = await startGateway(`
routes:
  - { name: slow, match: { path: /slow }, policy: slow-policy }
policies:
  - name: slow-policy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: up.in }
      - { from: up.success, to: client.in }
`);
  try {
    for (let i = 0; i < 5; i++) assert.equal((await request(`${gw.url}/slow`)).status, 200);
    const text = await gw.gateway.metrics.registry.metrics();
    assert.match(text, /# TYPE gateway_node_duration_seconds histogram/);
    const buckets = series(text, 'gateway_node_duration_seconds_bucket', 'up');
    const count = series(text, 'gateway_node_duration_seconds_count', 'up').get('');
    const sum = series(text, 'gateway_node_duration_seconds_sum', 'up').get('');
    const runs = series(text, 'gateway_node_executions_total', 'up').get('');
    const total = series(text, 'gateway_node_duration_seconds_total', 'up').get('');
    assert.equal(runs, 5);
    assert.equal(count, 5);
    assert.equal(buckets.get('+Inf'), 5);
    assert.ok(Math.abs((sum ?? 0) - (total ?? -1)) < 1e-9, 'the histogram sum is the node total time');
    const finite = [...buckets.entries()]
      .filter(([le]) => le !== '+Inf')
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    for (let i = 1; i < finite.length; i++)
      assert.ok(finite[i]![1] >= finite[i - 1]![1], 'buckets are cumulative');
    // The origin answers after DELAY_MS: no run of the upstream node can be in a bucket below it.
    for (const [le, value] of finite) if (Number(le) * 1000 < DELAY_MS) assert.equal(value, 0, `le=${le}`);
    // Every node that ran has its histogram, and only those.
    const histogramNodes = new Set(
      [...text.matchAll(/^gateway_node_duration_seconds_count\{[^}]*node_id="([^"]+)"/gm)].map((m) => m[1]),
    );
    const ranNodes = new Set(
      [...text.matchAll(/^gateway_node_executions_total\{[^}]*node_id="([^"]+)"/gm)].map((m) => m[1]),
    );
    assert.deepEqual([...histogramNodes].sort(), [...ranNodes].sort());
  } finally {
    await gw.stop();
    await origin.close();
  }
});
