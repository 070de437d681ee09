import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { script } from '../../../src/plugins/scripting/script.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { instantiate, pluginEnv, requestContext } from '../../support/plugin-env.js';
import { assertConfigError, compileIssues, deployment, nodeError } from './helpers.js';

const TAG = `function execute(ctx)
  ctx.request.headers["x-tag"] = { "lua" }
  return ctx
end`;

test('script: success port after the script changed the request', async () => {
  const node = instantiate(script, { inline: TAG });
  const ctx = requestContext();
  assert.equal(await node.run(ctx), 'success');
  assert.equal(ctx.request.headers['x-tag'], 'lua');
});

test('script: respond port when execute returns ctx, "respond"', async () => {
  const node = instantiate(script, {
    inline: 'function execute(ctx) ctx.response.status_code = 418 return ctx, "respond" end',
  });
  const ctx = requestContext();
  assert.equal(await node.run(ctx), 'respond');
  assert.equal(ctx.response.status, 418);
});

test('script: error port codes carry 500 and leave the context untouched', async () => {
  const node = instantiate(script, {
    inline: 'function execute(ctx) ctx.request.headers.x = "1" error("boom") end',
  });
  const ctx = requestContext();
  const err = await nodeError(() => node.run(ctx));
  assert.equal(err.code, 'LUA_EXECUTION_ERROR');
  assert.equal(err.status, 500);
  assert.equal(ctx.request.headers['x'], undefined);
});

test('script: source is read from the plugins/ folder beside the config folder', async () => {
  const d = deployment({ 'tag.lua': TAG });
  try {
    const node = instantiate(script, { source: 'tag.lua' }, pluginEnv({ configDir: d.configDir }));
    const ctx = requestContext();
    assert.equal(await node.run(ctx), 'success');
    assert.equal(ctx.request.headers['x-tag'], 'lua');
    const absolute = instantiate(script, { source: join(d.plugins, 'tag.lua') });
    assert.equal(await absolute.run(requestContext()), 'success');
  } finally {
    d.remove();
  }
});

test('script: source wins over inline', async () => {
  const d = deployment({ 'tag.lua': TAG });
  try {
    const node = instantiate(
      script,
      { source: 'tag.lua', inline: 'this is not lua' },
      pluginEnv({ configDir: d.configDir }),
    );
    const ctx = requestContext();
    assert.equal(await node.run(ctx), 'success');
    assert.equal(ctx.request.headers['x-tag'], 'lua');
  } finally {
    d.remove();
  }
});

test('script: require loads helpers from the script folder, and inline code from plugins/', async () => {
  const d = deployment({
    'helpers.lua': 'return { id = function() return "req-1" end }',
    'with-require.lua':
      'local h = require("helpers")\nfunction execute(ctx) ctx.message.id = h.id() return ctx end',
  });
  try {
    const env = pluginEnv({ configDir: d.configDir });
    for (const config of [
      { source: 'with-require.lua' },
      {
        inline: 'local h = require("helpers")\nfunction execute(ctx) ctx.message.id = h.id() return ctx end',
      },
    ]) {
      const ctx = requestContext();
      assert.equal(await instantiate(script, config, env).run(ctx), 'success');
      assert.equal(ctx.message['id'], 'req-1');
    }
  } finally {
    d.remove();
  }
});

test('script: config rejections name the key and the Lua code', () => {
  assertConfigError(() => instantiate(script, {}), '', /source or inline/);
  assertConfigError(() => instantiate(script, { source: 'x.lua' }), 'source', /relative/);
  assertConfigError(() => instantiate(script, { source: '/nonexistent/x.lua' }), 'source', /LUA_LOAD_ERROR/);
  assertConfigError(() => instantiate(script, { inline: 'function execute(' }), 'inline', /LUA_LOAD_ERROR/);
  assertConfigError(() => instantiate(script, { inline: 'local x = 1' }), 'inline', /LUA_MISSING_EXECUTE/);
  assertConfigError(
    () => instantiate(script, { inline: 'while true do end', timeout_ms: 50 }),
    'inline',
    /LUA_TIMEOUT/,
  );
  assert.throws(() => instantiate(script, { inline: TAG, runtime: 'luau' }), ConfigRejected);
  assert.throws(() => instantiate(script, { inline: TAG, timeout_ms: -1 }), ConfigRejected);
});

const policy = (scriptConfig: string, edges: string) => `
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: s, type: script, config: ${scriptConfig} }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: s.in }
      - { from: s.success, to: out.in }
${edges}
`;

test('script: runtime python is rejected at policy compile with a clear message', () => {
  const issues = compileIssues(
    policy('{ runtime: python, inline: "x" }', '      - { from: s.respond, to: out.in }'),
  );
  assert.ok(
    issues.some((m) => m.includes("runtime 'python' is not supported")),
    issues.join('\n'),
  );
});

test('script: a policy that leaves respond unwired is rejected, naming the port', () => {
  const issues = compileIssues(policy(`{ inline: ${JSON.stringify(TAG)} }`, ''));
  assert.ok(
    issues.some((m) => m.includes("output port 'respond' of node 's'")),
    issues.join('\n'),
  );
});

test('script: respond short-circuits the upstream; other requests are proxied with the script changes', async () => {
  const origin = await startOrigin(echo('origin'));
  const block = `
function execute(ctx)
  local ua = (ctx.request.headers["user-agent"] or {})[1] or ""
  if string.find(string.lower(ua), "scrapy", 1, true) then
    ctx.response.status_code = 403
    ctx.response.headers["content-type"] = { "application/json" }
    ctx.response.body = json.encode({ error = "forbidden" })
    return ctx, "respond"
  end
  ctx.request.headers["x-checked"] = { "yes" }
  return ctx
end`;
  let gw: RunningGateway | undefined;
  try {
    gw = await startGateway(`
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: bots, type: script, config: { inline: ${JSON.stringify(block)} } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: bots.in }
      - { from: bots.respond, to: out.in }
      - { from: bots.success, to: up.in }
      - { from: up.success, to: out.in }
`);
    const blocked = await request(`${gw.url}/x`, { headers: { 'user-agent': 'Scrapy/2.0' } });
    assert.equal(blocked.status, 403);
    assert.deepEqual(JSON.parse(blocked.body), { error: 'forbidden' });
    assert.equal(blocked.headers['content-type'], 'application/json');
    assert.equal(origin.requests.length, 0);
    const passed = await request(`${gw.url}/x`, { headers: { 'user-agent': 'curl/8' } });
    assert.equal(passed.status, 200);
    assert.equal(origin.requests.length, 1);
    assert.equal(origin.requests[0]?.headers['x-checked'], 'yes');
  } finally {
    await gw?.stop();
    await origin.close();
  }
});

test('script: a failing script answers 500 with its code through the error port', async () => {
  const gw = await startGateway(
    policy(
      '{ inline: "function execute(ctx) return 42 end" }',
      '      - { from: s.respond, to: out.in }\n      - { from: s.error, to: out.in }',
    ),
  );
  try {
    const res = await request(`${gw.url}/x`);
    assert.equal(res.status, 500);
    assert.equal((JSON.parse(res.body) as { error: string }).error, 'internal_error');
    assert.match(res.body, /must return the ctx table/);
  } finally {
    await gw.stop();
  }
});

test('script: a reload picks up an edited script file', async () => {
  const d = deployment({ 'tag.lua': TAG });
  const gatewayPath = join(d.configDir, 'gateway.yaml');
  writeFileSync(
    gatewayPath,
    policy('{ source: tag.lua }', '      - { from: s.respond, to: out.in }')
      .replace(
        '{ from: s.success, to: out.in }',
        '{ from: s.success, to: echo.in }\n      - { from: echo.success, to: out.in }',
      )
      .replace(
        '- { id: out, type: client }',
        '- { id: echo, type: echo, config: { body: "{{request.headers.x-tag}}" } }\n      - { id: out, type: client }',
      ),
  );
  const gw = await startGateway('', {
    gatewayPath,
    systemYaml: 'listener: { bind: 127.0.0.1, port: 0 }\nconfig: { watch: false }\n',
  });
  try {
    assert.equal((await request(`${gw.url}/x`)).body, 'lua');
    writeFileSync(join(d.plugins, 'tag.lua'), TAG.replace('"lua"', '"edited"'));
    await gw.gateway.reloadFromFile('signal');
    assert.equal((await request(`${gw.url}/x`)).body, 'edited');
  } finally {
    await gw.stop();
    d.remove();
  }
});

test('script: reads the response body, so an upstream before it buffers', () => {
  assert.equal(script.readsResponseBody?.({} as never), true);
});
