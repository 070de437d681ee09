import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { startGateway } from '../support/in-process.js';

test('templates: {{request.method}} renders in add_headers while $keep stays literal (E2E-TPL-01)', async () => {
  const seen: Record<string, string | string[] | undefined>[] = [];
  const origin = createServer((req, res) => {
    seen.push(req.headers);
    res.end('ok');
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const port = (origin.address() as AddressInfo).port;
  const gw = await startGateway(
    `
routes:
  - { name: r, match: { path: /t }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - id: rw
        type: proxy-rewrite
        config:
          add_headers:
            x-method: "{{request.method}} $keep"
            x-echo: "{{request.headers.x-client}}"
            x-env: "{{env.TEMPLATE_TEST_VALUE}}"
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: rw.in }
      - { from: rw.success, to: up.in }
      - { from: up.success, to: out.in }
`,
    { env: { TEMPLATE_TEST_VALUE: 'from-env' } },
  );
  try {
    const res = await fetch(`${gw.url}/t`, {
      method: 'POST',
      headers: { 'x-client': '{{request.method}} $host' },
    });
    assert.equal(res.status, 200);
    const headers = seen.at(-1);
    assert.equal(headers?.['x-method'], 'POST $keep');
    // Request data is never re-read as a template or a variable.
    assert.equal(headers?.['x-echo'], '{{request.method}} $host');
    assert.equal(headers?.['x-env'], 'from-env');
  } finally {
    await gw.stop();
    origin.close();
  }
});
