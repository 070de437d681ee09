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

/** F-15: the value a script reads through a ${VAR} placeholder, from the gateway's environment. */
const F15_SCRIPT_KEY = 'LUA-ENV-KEY-f15-0123456789';
/** F-15: a secret written into script text as a literal (shown as written: documented, out of scope). */
const F15_LITERAL = 'LITERAL-IN-SCRIPT-f15';

let config: SpawnedConfig;
let gw: GatewayProcess;
let admin: string;
before(async () => {
  config = await spawnedConfig(SYSTEM);
  gw = await startSpawned(config, { F15_SCRIPT_KEY });
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

test('F-15: script text is shown as written: a ${VAR} placeholder stays a placeholder for viewers and read tokens while the script runs with its value; a literal is shown as docs/security.md says', async () => {
  const inline = [
    'function execute(ctx)',
    `  local literal = "${F15_LITERAL}"`,
    '  ctx.response.status_code = 200',
    '  ctx.response.body = "key=${F15_SCRIPT_KEY}"',
    '  return ctx, "respond"',
    'end',
  ].join('\n');
  const policy = {
    nodes: [
      { id: 'in', type: 'listener' },
      { id: 's', type: 'script', config: { inline } },
      { id: 'out', type: 'client' },
    ],
    edges: [
      { from: 'in.out', to: 's.in' },
      { from: 's.respond', to: 'out.in' },
      { from: 's.success', to: 'out.in' },
    ],
  };
  const put = await asAdmin('PUT', '/api/policies/f15-script', policy);
  assert.ok(put.status === 200 || put.status === 201, await put.text());
  const route = await asAdmin('POST', '/api/routes', {
    name: 'f15',
    match: { path: '/f15' },
    policy: 'f15-script',
  });
  assert.equal(route.status, 201, await route.text());
  // The script runs with the environment's value.
  const served = await fetch(`http://127.0.0.1:${config.dataPort}/f15`);
  assert.equal(await served.text(), `key=${F15_SCRIPT_KEY}`);
  const shown: Record<string, string> = {
    'viewer GET /api/policies/f15-script': await (await asViewer('GET', '/api/policies/f15-script')).text(),
    'viewer GET /api/config/export': await (await asViewer('GET', '/api/config/export')).text(),
    'mcp get_policy': await mcpRead('get_policy', { name: 'f15-script' }),
    'mcp export_config': await mcpRead('export_config', {}),
  };
  for (const [where, text] of Object.entries(shown)) {
    assert.doesNotMatch(text, new RegExp(F15_SCRIPT_KEY), `${where}: the resolved value never shows`);
    assert.match(text, /\$\{F15_SCRIPT_KEY\}/, `${where}: the placeholder is shown`);
    // Masking reads keys, header maps and URLs, not free text (docs/security.md): a literal in
    // script text is shown as written. If this starts to fail, script text became masked: update
    // docs/security.md and docs/mcp.md#masking with it.
    assert.match(text, new RegExp(F15_LITERAL), `${where}: the literal is shown as written`);
  }
});
