import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { scaleConfig, scaleConfigYaml } from '../../bench/config-scale-config.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { renderGatewayYaml } from '../../src/config/persist.js';
import {
  OFF_THREAD_RENDER,
  OFF_THREAD_RENDER_BYTES,
  renderedOffThread,
} from '../../src/config/persist-off-thread.js';
import { startAdmin } from './harness.js';
import { countTurns } from '../support/event-loop-turns.js';

test('an Admin write to a large gateway.yaml is rendered off the main thread, comments kept', async () => {
  // The compiled build (how the gateway and CI run) renders in a worker; the sources cannot.
  assert.equal(OFF_THREAD_RENDER, import.meta.url.endsWith('.js'));
  const count = 600;
  const yaml = `# operators' notes: keep me\n${scaleConfigYaml(count, { upstreamPort: 9 })}`;
  assert.ok(Buffer.byteLength(yaml) >= 10 * OFF_THREAD_RENDER_BYTES);
  const h = await startAdmin({ gatewayYaml: yaml, onDisk: true });
  try {
    const policy = scaleConfig(2, { upstreamPort: 9, version: 'v2' }).policies[0]!;
    const expected = renderGatewayYaml(yaml, {
      ...h.gateway.runtime.config,
      policies: h.gateway.runtime.config.policies.map((p) =>
        p.name === 'p0' ? parseGatewayConfig(JSON.stringify({ policies: [policy] })).policies[0]! : p,
      ),
    });
    const renders = renderedOffThread();
    const loop = countTurns();
    const res = await h.call('PUT', '/api/policies/p0', policy);
    const turns = loop.stop();
    assert.equal(res.status, 200, await res.text());
    const written = readFileSync(h.file!, 'utf8');
    assert.equal(written, expected, 'the worker renders what the main thread would');
    assert.match(written, /^# operators' notes: keep me\n/);
    const answer = await fetch(`${h.data}/items/0`);
    assert.equal(await answer.text(), 'v2 p0 /items/0');
    // Requests keep being served while the file is rendered: the configuration goes to the worker
    // a few hundred items per turn, and the render itself takes no turn of the main thread.
    assert.equal(renderedOffThread() - renders, OFF_THREAD_RENDER ? 1 : 0);
    if (OFF_THREAD_RENDER) assert.ok(turns >= (2 * count) / 250, `${turns} event-loop turns`);
  } finally {
    await h.stop();
  }
});
