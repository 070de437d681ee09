/**
 * SPEC "Streaming" for proxy-rewrite (response-phase headers) and request-id
 * (`header_name`): a config that never renders the response body keeps the
 * upstream streaming; one that does forces buffering. Checked through
 * POST /api/policies/validate and by first-byte arrival from a slow origin.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import type { Origin } from '../../support/origins.js';
import { startSlowOrigin } from '../streaming-probe.js';

const harnesses: AdminHarness[] = [];
const origins: Origin[] = [];
after(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
  await Promise.all(origins.map((o) => o.close()));
});

function policy(name: string, port: number, node: { type: string; config: Record<string, unknown> }) {
  return {
    name,
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 'up', type: 'upstream', config: { targets: [{ host: '127.0.0.1', port }] } },
      { id: 'n', ...node },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 'up.in' },
      { from: 'up.success', to: 'n.in' },
      { from: 'n.success', to: 'out.in' },
    ],
  };
}

const cases = [
  {
    type: 'proxy-rewrite',
    streaming: { phase: 'response', add_headers: { 'x-seen': '{{request.method}}' } },
    buffering: { phase: 'response', add_headers: { 'x-seen': '{{response.body}}' } },
  },
  {
    type: 'request-id',
    streaming: { header_name: 'x-request-id' },
    buffering: { header_name: 'x-{{response.body}}' },
  },
];

for (const c of cases) {
  test(`${c.type}: E2E-STREAM — a config that does not render the body streams; one that does buffers`, async () => {
    const slow = await startSlowOrigin();
    origins.push(slow.origin);
    const keeps = policy('keeps', slow.origin.port, { type: c.type, config: c.streaming });
    const blocks = policy('blocks', slow.origin.port, { type: c.type, config: c.buffering });
    const h = await startAdmin({
      gatewayYaml: `
routes:
  - { name: s, match: { path: /s }, policy: keeps }
  - { name: b, match: { path: /b }, policy: blocks }
policies: ${JSON.stringify([keeps, blocks])}
`,
    });
    harnesses.push(h);
    const kept = await read(await h.call('POST', '/api/policies/validate', keeps));
    assert.deepEqual((kept.body as { buffering: unknown[] }).buffering, []);
    const blocked = await read(await h.call('POST', '/api/policies/validate', blocks));
    assert.deepEqual((blocked.body as { buffering: unknown[] }).buffering, [
      { upstream: 'up', blocked_by: 'n' },
    ]);
    const streamed = await slow.probe(`${h.data}/s`);
    assert.equal(streamed.streamed, true, 'first event reached the client before the origin finished');
    assert.equal(streamed.body, 'data: one\n\ndata: two\n\n');
    // Buffered: nothing reaches the client until the origin is done (the body here makes an
    // unsendable header value, which the gateway answers with a 502 rather than crashing).
    const buffered = await slow.probe(`${h.data}/b`);
    assert.equal(buffered.streamed, false);
  });
}
