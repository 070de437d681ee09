/**
 * src/lua reads fengari 0.1.5's private objects for speed (fengari-internals.ts, chunk-shape.ts).
 * Each Lua worker checks those shapes once as it starts; when one differs, the gateway logs one
 * WARN and runs Lua through fengari's public API only. SWITCHYARD_STUB_INTERNALS=fengari shows the
 * probe a state without `errfunc`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fengariShapeProblem } from '../../src/lua/fengari-internals.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';

const WARNING = "fengari's private objects are not the ones src/lua was written for";
const SCRIPT = `
local greeting = "hello"
function execute(ctx)
  ctx.response.status_code = 200
  ctx.response.headers["content-type"] = { "text/plain" }
  ctx.response.body = greeting .. " " .. ctx.request.path
  return ctx, "respond"
end`;

const dir = tempDir('switchyard-lua-internals-');
after(() => dir.remove());

async function start(name: string, env: NodeJS.ProcessEnv): Promise<{ gw: GatewayProcess; port: number }> {
  const port = await freePort();
  const system = join(dir.path, `${name}-system.yaml`);
  const gateway = join(dir.path, `${name}-gateway.yaml`);
  writeFileSync(system, `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: info }\n`);
  writeFileSync(
    gateway,
    [
      'routes:',
      '  - { name: all, match: { path: /* }, policy: lua }',
      'policies:',
      '  - name: lua',
      '    nodes:',
      '      - { id: listener, type: listener }',
      `      - { id: s, type: script, config: { inline: ${JSON.stringify(SCRIPT)} } }`,
      '      - { id: client, type: client }',
      '    edges:',
      '      - { from: listener.out, to: s.in }',
      '      - { from: s.respond, to: client.in }',
      '      - { from: s.success, to: client.in }',
      '',
    ].join('\n'),
  );
  const gw = spawnGateway(['--system-config', system, '--gateway-config', gateway], env);
  await waitForHttp(`http://127.0.0.1:${port}/ready`, 60000);
  return { gw, port };
}

function warnings(output: string): string[] {
  return output.split('\n').filter((l) => l.includes(WARNING));
}

test('the shipped fengari has the private shapes src/lua reads (a release that changes them fails here)', () => {
  assert.equal(fengariShapeProblem(), undefined);
});

test('fengari shapes as shipped: scripts run and no fallback is logged', async () => {
  const { gw, port } = await start('real', {});
  try {
    const res = await fetch(`http://127.0.0.1:${port}/a`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hello /a');
    assert.deepEqual(warnings(gw.output()), []);
  } finally {
    await gw.stop();
  }
});

test('a stubbed fengari shape: one WARN, and scripts still answer through the public Lua API', async () => {
  const { gw, port } = await start('stubbed', { SWITCHYARD_STUB_INTERNALS: 'fengari' });
  try {
    for (const path of ['/a', '/b', '/c']) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), `hello ${path}`);
    }
    const logged = warnings(gw.output());
    assert.equal(logged.length, 1, gw.output());
    const line = JSON.parse(logged[0] ?? '{}') as { level?: unknown; problem?: unknown };
    assert.equal(line.problem, 'lua_State.errfunc is not a number');
    assert.ok(line.level === 40 || line.level === 'warn', `level ${String(line.level)}`);
  } finally {
    await gw.stop();
  }
});
