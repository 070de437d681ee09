/**
 * Issue 31 item 2: a route's `priority` (higher is tried first; equal priorities keep declaration
 * order), the same from gateway.yaml and from the Admin API. Each route runs a policy that answers
 * its own name, so the body says which route won.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { getText, mockPolicy, mockPolicyYaml, startAdmin } from '../admin/harness.js';
import { startGateway } from '../support/in-process.js';

/** gateway.yaml with one answering policy per route; `routes` are YAML flow maps without `policy`. */
function gatewayYaml(routes: { name: string; rest: string }[]): string {
  return [
    'routes:',
    ...routes.map((r) => `  - { name: ${r.name}, policy: ${r.name}, ${r.rest} }`),
    'policies:',
    ...routes.map((r) => mockPolicyYaml(r.name, r.name)),
  ].join('\n');
}

async function winners(base: string, paths: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const path of paths) {
    const { status, text } = await getText(base + path);
    out[path] = status === 404 ? '404' : text;
  }
  return out;
}

test('priority from gateway.yaml: a higher priority wins over an earlier broader route; equal priorities keep declaration order', async () => {
  const running = await startGateway(
    gatewayYaml([
      { name: 'fallback', rest: 'match: { path: /* }, priority: -1' },
      { name: 'general', rest: 'match: { path: /api/* }' },
      { name: 'special', rest: 'match: { path: /api/special }, priority: 10' },
      { name: 'first-tie', rest: 'match: { path: /tie/* }, priority: 5' },
      { name: 'second-tie', rest: 'match: { path: /tie/exact }, priority: 5' },
      { name: 'get-only', rest: 'match: { path: /api/special, methods: [GET] }, priority: 20' },
    ]),
  );
  try {
    assert.deepEqual(
      await winners(running.url, ['/api/special', '/api/other', '/tie/exact', '/tie/x', '/x']),
      {
        // get-only (20) beats special (10), which beats general (0) although general is declared first.
        '/api/special': 'get-only',
        '/api/other': 'general',
        // Equal priority 5: first-tie is declared first and matches, so second-tie never wins.
        '/tie/exact': 'first-tie',
        '/tie/x': 'first-tie',
        // fallback is declared first but has the lowest priority: it takes only what nothing else does.
        '/x': 'fallback',
      },
    );
    const post = await fetch(`${running.url}/api/special`, { method: 'POST' });
    assert.equal(await post.text(), 'special', 'a POST is not matched by the GET-only route');
  } finally {
    await running.stop();
  }
});

test('without any priority the declaration order decides, as before (first match wins)', async () => {
  const running = await startGateway(
    gatewayYaml([
      { name: 'general', rest: 'match: { path: /api/* }' },
      { name: 'special', rest: 'match: { path: /api/special }, priority: 0' },
    ]),
  );
  try {
    assert.deepEqual(await winners(running.url, ['/api/special', '/api/x']), {
      '/api/special': 'general',
      '/api/x': 'general',
    });
  } finally {
    await running.stop();
  }
});

test('priority must be an integer within the 32-bit signed range', () => {
  for (const bad of ['1.5', 'high', '2147483648', '-2147483649']) {
    assert.throws(
      () => parseGatewayConfig(`routes: [{ name: r, match: { path: /r }, policy: p, priority: ${bad} }]`),
      (err: unknown) =>
        err instanceof ConfigRejected && err.issues.some((i) => /priority/.test(i.path + i.message)),
      `priority: ${bad}`,
    );
  }
  for (const good of ['2147483647', '-2147483648', '0']) {
    const config = parseGatewayConfig(
      `routes: [{ name: r, match: { path: /r }, policy: p, priority: ${good} }]`,
    );
    assert.equal(config.routes[0]?.priority, Number(good));
  }
});

test('priority from the Admin API: a POSTed route with a higher priority wins at once; route-order reorders only equal priorities', async () => {
  const h = await startAdmin({
    gatewayYaml: gatewayYaml([{ name: 'general', rest: 'match: { path: /api/* }' }]),
  });
  try {
    for (const name of ['special', 'tied']) {
      const res = await h.call('PUT', `/api/policies/${name}`, mockPolicy(name, name));
      assert.ok(res.status === 200 || res.status === 201, await res.text());
    }
    const created = await h.call('POST', '/api/routes', {
      name: 'special',
      match: { path: '/api/special' },
      policy: 'special',
      priority: 10,
    });
    assert.equal(created.status, 201, await created.text());
    // Appended after general, yet it wins for its path.
    assert.deepEqual(await winners(h.data, ['/api/special', '/api/x']), {
      '/api/special': 'special',
      '/api/x': 'general',
    });
    const shown = (await (await h.call('GET', '/api/routes/special')).json()) as { priority?: number };
    assert.equal(shown.priority, 10);

    // A second route of the same priority 10 for an overlapping path: declaration order among the two.
    const tied = await h.call('POST', '/api/routes', {
      name: 'tied',
      match: { path: '/api/*' },
      policy: 'tied',
      priority: 10,
    });
    assert.equal(tied.status, 201, await tied.text());
    assert.deepEqual(await winners(h.data, ['/api/special', '/api/x']), {
      '/api/special': 'special',
      '/api/x': 'tied',
    });
    const reordered = await h.call('PUT', '/api/route-order', { names: ['tied', 'general', 'special'] });
    assert.equal(reordered.status, 200, await reordered.text());
    // tied now precedes special (both 10); general moved up but stays below both.
    assert.deepEqual(await winners(h.data, ['/api/special', '/api/x']), {
      '/api/special': 'tied',
      '/api/x': 'tied',
    });

    const refused = await h.call('PUT', '/api/routes/special', {
      match: { path: '/api/special' },
      policy: 'special',
      priority: 1.5,
    });
    const refusal = await refused.text();
    assert.equal(refused.status, 400, refusal);
    assert.match(refusal, /priority/);
  } finally {
    await h.stop();
  }
});
