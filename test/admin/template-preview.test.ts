import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BASE_YAML, basic, read, startAdmin, type AdminHarness } from './harness.js';

const VIEWER = basic('viewer', 'Viewer-Pw-123456');

const SAMPLE = {
  method: 'POST',
  path: '/orders/42?page=2',
  host: 'api.example.com',
  headers: { 'x-tenant-id': 'acme' },
  remote_addr: '203.0.113.7:51234',
  message: { 'consumer.name': 'ada' },
};

describe('template preview: the gateway renders a template for a sample request', () => {
  let h: AdminHarness;
  before(async () => {
    h = await startAdmin({
      gatewayYaml: BASE_YAML,
      admin: 'users: [{ username: viewer, password: Viewer-Pw-123456, role: viewer }]',
      env: { ...process.env, PREVIEW_SECRET: 'S3CRET-VALUE' },
    });
  });
  after(() => h.stop());

  const preview = async (body: unknown, auth = basic()) =>
    read(
      await fetch(`${h.url}/api/templates/preview`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    );

  test('template preview: request fields render from the sample request', async () => {
    const { status, body } = await preview({
      template:
        '{{request.method}} {{request.path}} tenant={{request.headers.x-tenant-id}} page={{request.query.page}} ip={{client.ip}} who={{message.consumer.name}}',
      request: SAMPLE,
    });
    assert.equal(status, 200);
    assert.deepEqual(body, {
      preview: 'POST /orders/42 tenant=acme page=2 ip=203.0.113.7 who=ada',
      length: 57,
      truncated: false,
      static: false,
      warnings: [],
    });
  });

  test('template preview: a long rendering is one line of at most 80 characters', async () => {
    const { body } = await preview({ template: `{{request.host}}\n${'x'.repeat(200)}`, request: SAMPLE });
    const b = body as { preview: string; length: number; truncated: boolean };
    assert.equal([...b.preview].length, 80);
    assert.ok(b.preview.startsWith('api.example.com ⏎ xxx'), b.preview);
    assert.ok(b.preview.endsWith('…'));
    assert.equal(b.length, 'api.example.com'.length + 1 + 200);
    assert.equal(b.truncated, true);
  });

  test('template preview: a reference the renderer does not know stays literal, with its warning', async () => {
    const { status, body } = await preview({ template: 'a {{request.nope}} b', request: SAMPLE });
    assert.equal(status, 200);
    const b = body as { preview: string; warnings: string[] };
    assert.equal(b.preview, 'a {{request.nope}} b');
    assert.equal(b.warnings.length, 1);
    assert.match(b.warnings[0] ?? '', /request\.nope/);
  });

  test('template preview: legacy $variables render only when asked, as the legacy field groups do', async () => {
    const on = await preview({
      template: '$request_method $http_x_tenant_id',
      request: SAMPLE,
      legacy: true,
    });
    assert.equal((on.body as { preview: string }).preview, 'POST acme');
    const off = await preview({ template: '$request_method', request: SAMPLE });
    assert.equal((off.body as { preview: string }).preview, '$request_method');
  });

  test('template preview: environment variables never show their value', async () => {
    const { body } = await preview({ template: 'token {{env.PREVIEW_SECRET}}' });
    assert.equal((body as { preview: string }).preview, 'token <env PREVIEW_SECRET>');
    assert.doesNotMatch(JSON.stringify(body), /S3CRET-VALUE/);
  });

  test('template preview: a viewer may preview, and still may not write', async () => {
    const { status, body } = await preview({ template: '{{request.method}}' }, VIEWER);
    assert.equal(status, 200);
    assert.equal((body as { preview: string }).preview, 'GET');
    const write = await fetch(`${h.url}/api/policies/validate`, {
      method: 'POST',
      headers: { authorization: VIEWER, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(write.status, 403);
  });

  test('template preview: bad input is refused with a message naming the field', async () => {
    const missing = await preview({});
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.body), /'template' must be a string/);
    const unknown = await preview({ template: 'x', requets: {} });
    assert.equal(unknown.status, 400);
    assert.match(JSON.stringify(unknown.body), /unknown field 'requets'/);
    const badRequest = await preview({ template: 'x', request: { path: 'no-slash' } });
    assert.equal(badRequest.status, 400);
    assert.match(JSON.stringify(badRequest.body), /request\.path must start with/);
    const long = await preview({ template: 'x'.repeat(9000) });
    assert.equal(long.status, 400);
    assert.match(JSON.stringify(long.body), /must not exceed 8192 characters/);
  });

  test('template preview: a body over 64 KiB is refused with 413', async () => {
    const { status, body } = await preview({ template: 'x', request: { body: 'y'.repeat(70 * 1024) } });
    assert.equal(status, 413);
    assert.match(JSON.stringify(body), /must not exceed 65536 bytes/);
  });
});
