import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { basic } from './harness.js';
import { spawnedConfig, startSpawned, type SpawnedConfig } from './spawned.js';

/** The review's setup (security-review.md, F-5 and F-7), against the real CLI process. */
const READ_TOKEN = 'read-token-0123456789abcdef';
const SYSTEM = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: warn, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  'debug: { enabled: true }',
  'admin:',
  '  bind: 127.0.0.1',
  '  port: @ADMIN_PORT@',
  '  username: admin',
  '  password: "correct horse"',
  '  users: [{ username: viewer, password: "Viewer-Pw-123456", role: viewer }]',
  '  mcp:',
  '    enabled: true',
  `    tokens: [{ token: "${READ_TOKEN}", scope: read, name: reader }]`,
  '',
].join('\n');

const AUTH_HEADER = 'Basic QVVUSEhEUi1TRUNSRVQ=';
const LOGSHIP = {
  type: 'http-logger',
  config: {
    uri: 'http://127.0.0.1:9/log?api_key=QKEY-123',
    auth_header: AUTH_HEADER,
    headers: { 'x-collector-key': 'COLLECTOR-KEY-123' },
  },
};
const LEAKS = /QVVUSEhEUi1TRUNSRVQ|QKEY-123|COLLECTOR-KEY-123/;

let config: SpawnedConfig;
let gw: GatewayProcess;
let admin: string;
before(async () => {
  config = await spawnedConfig(SYSTEM);
  gw = await startSpawned(config);
  admin = `http://127.0.0.1:${config.adminPort}`;
});
after(async () => {
  await gw.stop();
  config.remove();
});

const as = (authorization: string) => (method: string, path: string, body?: unknown) =>
  fetch(admin + path, {
    method,
    headers: { authorization, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const asAdmin = as(basic());
const asViewer = as(basic('viewer', 'Viewer-Pw-123456'));

async function mcpRead(tool: string, args: Record<string, unknown>): Promise<string> {
  const client = new Client({ name: 'review3', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${admin}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${READ_TOKEN}` } },
    }),
  );
  try {
    const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    assert.notEqual(result.isError, true, `${tool} failed`);
    return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  } finally {
    await client.close();
  }
}

test('F-5: http-logger auth_header is masked for a viewer and an MCP read token, everywhere they read it', async () => {
  assert.equal((await asAdmin('PUT', '/api/plugin-configs/logship', LOGSHIP)).status, 201);
  // The author still reads it whole.
  assert.match(await (await asAdmin('GET', '/api/plugin-configs/logship')).text(), /QVVUSEhEUi1TRUNSRVQ/);
  const shown: Record<string, string> = {
    'viewer GET /api/plugin-configs/logship': await (
      await asViewer('GET', '/api/plugin-configs/logship')
    ).text(),
    'viewer GET /api/plugin-configs': await (await asViewer('GET', '/api/plugin-configs')).text(),
    'viewer GET /api/config/export': await (await asViewer('GET', '/api/config/export')).text(),
    'mcp get_plugin_config': await mcpRead('get_plugin_config', { name: 'logship' }),
    'mcp export_config': await mcpRead('export_config', {}),
  };
  for (const [where, text] of Object.entries(shown)) {
    assert.match(text, /logship/, where);
    assert.doesNotMatch(text, LEAKS, where);
    assert.match(text, /auth_header/, where);
  }
  const viewer = JSON.parse(shown['viewer GET /api/plugin-configs/logship'] as string) as typeof LOGSHIP;
  assert.equal(viewer.config.auth_header, '<redacted>');
});

test('F-7: a name holding a lone UTF-16 surrogate is refused with 400 before anything is applied or persisted', async () => {
  const file = () => createHash('sha256').update(readFileSync(config.gatewayPath)).digest('hex');
  const before = file();
  const routesBefore = await (await asAdmin('GET', '/api/routes')).text();
  const bad = 'x\ud800';
  const cases: [string, string, unknown][] = [
    ['POST', '/api/routes', { name: bad, match: { path: '/n' }, policy: 'hello-policy' }],
    ['POST', '/api/consumers', { name: bad }],
    ['POST', '/api/stores', { name: bad, type: 'redis', url: 'redis://127.0.0.1:1' }],
    ['POST', '/api/routes', { name: '\udc00', match: { path: '/n' }, policy: 'hello-policy' }],
  ];
  for (const [method, path, body] of cases) {
    const res = await asAdmin(method, path, body);
    const text = await res.text();
    assert.equal(res.status, 400, `${method} ${path}: ${text}`);
    assert.match(text, /name/, `${method} ${path} names the field`);
  }
  assert.equal(file(), before, 'gateway.yaml unchanged');
  assert.equal(await (await asAdmin('GET', '/api/routes')).text(), routesBefore);
  // A retry with a well-formed name (an astral character is a surrogate pair) is created, with its Location.
  const ok = await asAdmin('POST', '/api/routes', {
    name: 'x😀',
    match: { path: '/n' },
    policy: 'hello-policy',
  });
  assert.equal(ok.status, 201, await ok.text());
  assert.equal(ok.headers.get('location'), `/api/routes/${encodeURIComponent('x😀')}`);
});
