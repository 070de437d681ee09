import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAdmin, read, type AdminHarness } from '../admin/harness.js';
import { request } from '../support/http.js';
import { TRACE_ID, ORIGIN, TRIGGER, type TraceBody } from './harness.js';

/** /echo: proxy-rewrite injects headers under secret-looking and innocent names, then a mocking answer. */
const YAML = `
routes:
  - { name: echo, match: { path: /echo }, policy: echo-policy }
policies:
  - name: echo-policy
    nodes:
      - { id: listener, type: listener }
      - id: rw
        type: proxy-rewrite
        config:
          headers:
            set: { x-upstream-auth: "Bearer UPSTREAM-BEARER-LITERAL", x-api-key: UPSTREAM-API-KEY-LITERAL }
      - { id: m, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: rw.in }
      - { from: rw.success, to: m.in }
      - { from: m.success, to: client.in }
`;

const SECRET_VALUES = [
  'QPASS',
  'XSECRET',
  'PRIVTOKEN',
  'XAUTHVAL',
  'SESSIONVAL',
  'UPSTREAM-BEARER-LITERAL',
  'UPSTREAM-API-KEY-LITERAL',
];

async function traceOf(url: string, h: AdminHarness, id: unknown): Promise<TraceBody> {
  assert.equal(typeof id, 'string', 'a traced response carries the trace id');
  const got = await read(await h.call('GET', `/api/debug/traces/${String(id)}`));
  assert.equal(got.status, 200, url);
  return got.body as TraceBody;
}

test('L2: query password=, x-secret-header, private-token, x-auth and injected auth headers are redacted in the trace', async () => {
  const h = await startAdmin({ gatewayYaml: YAML, system: 'debug: { enabled: true }' });
  try {
    const res = await request(`${h.data}/echo?password=QPASS&page=2&db_passwd=QPASS`, {
      headers: {
        [TRIGGER]: '1',
        'x-secret-header': 'XSECRET',
        'private-token': 'PRIVTOKEN',
        'x-auth': 'XAUTHVAL',
        'x-session-id': 'SESSIONVAL',
        'x-tenant': 'acme',
      },
    });
    assert.equal(res.status, 200);
    const trace = await traceOf('/echo', h, res.headers[TRACE_ID]);
    const text = JSON.stringify(trace);
    for (const secret of SECRET_VALUES) assert.ok(!text.includes(secret), `${secret} kept in the trace`);
    const initial = trace.initial.request;
    assert.deepEqual(initial.query_params['password'], ['<redacted>']);
    assert.deepEqual(initial.query_params['page'], ['2']);
    assert.deepEqual(initial.headers['x-secret-header'], ['<redacted>']);
    assert.deepEqual(initial.headers['x-tenant'], ['acme'], 'a harmless name stays readable');
    const after = trace.steps.find((s) => s.node_id === 'rw')?.after.request.headers;
    assert.deepEqual(after?.['x-upstream-auth'], ['<redacted>']);
    const config = await read(await h.call('GET', '/api/debug/config'));
    const redaction = (config.body as { redaction: { name_patterns: { substrings: string[] } } }).redaction;
    assert.ok(redaction.name_patterns.substrings.includes('auth'));
  } finally {
    await h.stop();
  }
});

test('L9: the trigger header from a client outside debug.allowed_cidrs gets no trace headers', async () => {
  // Loopback is the test client; an allow-list without it stands for a remote client.
  const h = await startAdmin({
    gatewayYaml: YAML,
    system: 'debug: { enabled: true, allowed_cidrs: ["10.0.0.0/8", "fd00::/8"] }',
  });
  try {
    const res = await request(`${h.data}/echo`, { headers: { [TRIGGER]: '1' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers[TRACE_ID], undefined);
    assert.equal(res.headers[ORIGIN], undefined);
    const unrouted = await request(`${h.data}/nope`, { headers: { [TRIGGER]: '1' } });
    assert.equal(unrouted.status, 404);
    assert.equal(unrouted.headers[TRACE_ID], undefined);
    const list = await read(await h.call('GET', '/api/debug/traces'));
    assert.deepEqual((list.body as { traces: unknown[] }).traces, [], 'nothing filled the ring');
  } finally {
    await h.stop();
  }
});

test('L9: the default allows loopback; with debug.header_secret only the right value traces, and it is redacted', async () => {
  const local = await startAdmin({ gatewayYaml: YAML, system: 'debug: { enabled: true }' });
  try {
    const res = await request(`${local.data}/echo`, { headers: { [TRIGGER]: '1' } });
    assert.equal(typeof res.headers[TRACE_ID], 'string', 'the documented local workflow still works');
  } finally {
    await local.stop();
  }
  const secret = 'debug-header-secret-0123456789';
  const h = await startAdmin({
    gatewayYaml: YAML,
    system: `debug: { enabled: true, header_secret: "${secret}" }`,
  });
  try {
    for (const value of ['1', `${secret}x`, secret.slice(0, -1)]) {
      const wrong = await request(`${h.data}/echo`, { headers: { [TRIGGER]: value } });
      assert.equal(wrong.headers[TRACE_ID], undefined, value);
    }
    const right = await request(`${h.data}/echo`, { headers: { [TRIGGER]: secret } });
    const trace = await traceOf('/echo', h, right.headers[TRACE_ID]);
    assert.ok(!JSON.stringify(trace).includes(secret), 'the header secret is not kept in the trace');
  } finally {
    await h.stop();
  }
});

test('L9: a bad debug.allowed_cidrs entry or a short header_secret is a load error naming the key', async () => {
  await assert.rejects(
    startAdmin({ gatewayYaml: YAML, system: 'debug: { enabled: true, allowed_cidrs: ["10.0.0.0/99"] }' }),
    (err: Error & { issues?: { path: string }[] }) =>
      err.issues?.some((i) => i.path === 'debug.allowed_cidrs[0]') === true,
  );
  await assert.rejects(
    startAdmin({ gatewayYaml: YAML, system: 'debug: { enabled: true, header_secret: short }' }),
    (err: Error & { issues?: { path: string }[] }) =>
      err.issues?.some((i) => i.path === 'debug.header_secret') === true,
  );
});

test('H1: the admin sandbox refuses ${VAR} and {{env.X}} in ad-hoc nodes without revealing the value', async () => {
  const value = 'Env-Admin-Pass-XYZ';
  const h = await startAdmin({
    gatewayYaml: `${YAML}
plugin_configs:
  - { name: shared, type: mocking, config: { response_example: "stored \${SOME_VAR}", content_type: text/plain } }
`,
    system: 'debug: { enabled: true, sandbox: true }',
    env: { ...process.env, SOME_VAR: value },
  });
  try {
    for (const ref of ['${SOME_VAR}', '{{env.SOME_VAR}}', '{{ env.SOME_VAR }}', '${SOME_VAR:-x}']) {
      const res = await read(
        await h.call('POST', '/api/debug/sandbox', {
          nodes: [
            { id: 'm', type: 'mocking', config: { response_example: 'x', response_headers: { 'x-a': ref } } },
          ],
        }),
      );
      assert.equal(res.status, 400, ref);
      const text = JSON.stringify(res.body);
      assert.ok(!text.includes(value), `${ref} revealed the value`);
      assert.match(text, /nodes\[0\]\.config\.response_headers\.x-a/);
      assert.match(text, /SOME_VAR/);
    }
    // The config author's stored placeholders still resolve for the admin (their own secret).
    const stored = await read(
      await h.call('POST', '/api/debug/sandbox', {
        nodes: [{ id: 'm', type: 'mocking', config_ref: 'shared' }],
      }),
    );
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
  } finally {
    await h.stop();
  }
});
