import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listScripts } from '../../../src/lua/sources.js';
import { request } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { compileIssues, compileYaml, deployment } from './helpers.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const example = join(repo, 'examples', 'lua-scripts');
const corpus = process.env.SWITCHYARD_COMPAT_CORPUS ?? join(repo, '..', 'shared', 'compat-corpus');

test('lua-scripts example: request id, user-agent block and response timer', async () => {
  const origin = await startOrigin(echo('backend'));
  let gw: RunningGateway | undefined;
  try {
    gw = await startGateway('', {
      gatewayPath: join(example, 'config', 'gateway.yaml'),
      env: { BACKEND_HOST: '127.0.0.1', BACKEND_PORT: String(origin.port) },
    });
    const ok = await request(`${gw.url}/api/users`);
    assert.equal(ok.status, 200);
    assert.match(String(ok.headers['x-response-time']), /^\d+\.\d\dms$/);
    const seen = origin.requests[0];
    assert.equal(seen?.url, '/backend/users');
    assert.match(
      String(seen?.headers['x-request-id']),
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    await request(`${gw.url}/api/users`, { headers: { 'x-request-id': 'mine' } });
    assert.equal(origin.requests[1]?.headers['x-request-id'], 'mine');
    const bot = await request(`${gw.url}/api/users`, { headers: { 'user-agent': 'Scrapy/2.7' } });
    assert.equal(bot.status, 403);
    assert.deepEqual(JSON.parse(bot.body), { error: 'forbidden', message: 'Blocked user agent' });
    assert.equal(origin.requests.length, 2);
  } finally {
    await gw?.stop();
    await origin.close();
  }
});

test('lua-scripts example: GET /api/scripts lists the plugins folder', () => {
  assert.deepEqual(listScripts(join(example, 'config')), {
    scripts: [
      { name: 'add-request-id', file: 'add-request-id.lua', runtime: 'lua' },
      { name: 'block-user-agents', file: 'block-user-agents.lua', runtime: 'lua' },
      { name: 'helpers', file: 'helpers.lua', runtime: 'lua' },
      { name: 'response-timer', file: 'response-timer.lua', runtime: 'lua' },
    ],
  });
  assert.deepEqual(listScripts(undefined), { scripts: [] });
  assert.deepEqual(listScripts('/nonexistent/config'), { scripts: [] });
});

/**
 * The reference's script configurations predate release 0.11.0: they leave
 * `respond` unwired and read scripts from /etc/gateway/plugins. Under SPEC
 * (Versioning 2) they are rejected for exactly the unwired ports; with the
 * one-line fix per node and the scripts in place they validate.
 */
for (const name of [
  'new/examples/lua-scripts/config/gateway.yaml',
  'v0.3/examples/gateway-with-scripts.yaml',
]) {
  const file = join(corpus, name);
  test(
    `lua compat: ${name} needs only the 0.11.0 respond edges`,
    { skip: !existsSync(file) && 'no corpus' },
    () => {
      const original = readFileSync(file, 'utf8');
      const scripts = [...original.matchAll(/^ {6}- id: (\S+)\n {8}type: script\n/gm)].map(
        (m) => m[1] as string,
      );
      assert.equal(scripts.length, 4);
      const issues = compileIssues(original);
      assert.equal(issues.length, scripts.length, issues.join('\n'));
      for (const id of scripts)
        assert.ok(
          issues.some((m) => m.includes(`'${id}.respond'`)),
          id,
        );

      const d = deployment({});
      try {
        for (const f of readdirSync(join(example, 'plugins')))
          copyFileSync(join(example, 'plugins', f), join(d.plugins, f));
        const fixed = original
          .replaceAll('/etc/gateway/plugins/', '')
          .replace(
            /\n {4}edges:\n/,
            `\n    edges:\n${scripts.map((id) => `      - { from: ${id}.respond, to: client.in }\n`).join('')}`,
          );
        void compileYaml(fixed, d.configDir).close();
      } finally {
        d.remove();
      }
    },
  );
}
