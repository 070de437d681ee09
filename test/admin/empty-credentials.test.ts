import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { startAdminServer } from '../../src/admin/server.js';
import { silentLogger } from '../../src/core/logger.js';
import { spawnGateway } from '../support/gateway-process.js';
import { startGateway } from '../support/in-process.js';
import { basic } from './harness.js';
import { rawRequest, spawnedConfig, startSpawned, validate } from './spawned.js';

test('admin credentials (H3): an unset ${VAR} in admin.users[].password fails startup and validate, naming the key', async () => {
  // The review's reproduction: ADMIN_PASSWORD generated, OPS_PASSWORD unset.
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: "${ADMIN_PASSWORD:-}", users: [{ username: ops, password: "${OPS_PASSWORD}" }] }',
      '',
    ].join('\n'),
  );
  const env = { OPS_PASSWORD: undefined, ADMIN_PASSWORD: undefined };
  try {
    const checked = validate(config, env);
    assert.equal(checked.status, 1, checked.output);
    assert.match(checked.output, /admin\.users\[0\]\.password: \$\{OPS_PASSWORD\} is not set/);
    assert.doesNotMatch(checked.output, /configuration is valid/);

    const p = spawnGateway(config.args, env);
    const code = await p.exited;
    assert.equal(code, 1, p.output());
    assert.match(p.output(), /admin\.users\[0\]\.password: \$\{OPS_PASSWORD\} is not set/);
    // Nothing listens: the empty-password account never existed.
    await assert.rejects(rawRequest(`http://127.0.0.1:${config.adminPort}/api/status`));
  } finally {
    config.remove();
  }
});

test('admin credentials (H3): ${VAR:-} resolving to empty, a set-but-empty variable, an empty value and unset MCP tokens are load errors too', () => {
  const cases: [string, NodeJS.ProcessEnv, string, string][] = [
    [
      'users: [{ username: ops, password: "${OPS_PASSWORD:-}" }]',
      {},
      'admin.users[0].password',
      '${OPS_PASSWORD:-} is not set',
    ],
    [
      'users: [{ username: ops, password: "${OPS_PASSWORD}" }]',
      { OPS_PASSWORD: '' },
      'admin.users[0].password',
      '${OPS_PASSWORD} is empty',
    ],
    [
      'users: [{ username: ops, password: "pw-${SUFFIX}" }]',
      {},
      'admin.users[0].password',
      '${SUFFIX} is not set',
    ],
    ['users: [{ username: ops, password: "" }]', {}, 'admin.users[0].password', 'must not be empty'],
    ['password: ${ADMIN_PASSWORD}', {}, 'admin.password', '${ADMIN_PASSWORD} is not set'],
    [
      'mcp: { enabled: true, tokens: [{ token: "${MCP_TOKEN}", scope: read }] }',
      {},
      'admin.mcp.tokens[0].token',
      '${MCP_TOKEN} is not set',
    ],
  ];
  for (const [extra, env, path, message] of cases) {
    const text = `admin: { username: admin, ${extra} }\n`;
    assert.throws(
      () => parseSystemConfig(text, env),
      (err: unknown) =>
        err instanceof ConfigRejected &&
        err.issues.some((i) => i.path === path && i.message.startsWith(message)),
      extra,
    );
  }
  // Not credentials in use: a disabled MCP block may keep unset tokens; ${NAME:-} asks for a generated admin password.
  parseSystemConfig(
    'admin: { username: admin, mcp: { enabled: false, tokens: [{ token: "${MCP_TOKEN}" }] } }\n',
    {},
  );
  assert.equal(
    parseSystemConfig('admin: { username: admin, password: "${ADMIN_PASSWORD:-}" }\n', {}).admin?.password,
    '',
  );
});

test('admin credentials (H3): admin.password ${ADMIN_PASSWORD:-} still generates a password; an empty password is refused', async () => {
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { port: @ADMIN_PORT@, username: admin, password: "${ADMIN_PASSWORD:-}", users: [{ username: ops, password: "${OPS_PASSWORD}" }] }',
      '',
    ].join('\n'),
  );
  const p = await startSpawned(config, { ADMIN_PASSWORD: undefined, OPS_PASSWORD: 'ops-secret-123' });
  try {
    const generated = /generated password for user 'admin': (\S+)/.exec(p.output())?.[1];
    assert.ok(generated !== undefined, p.output());
    const url = `http://127.0.0.1:${config.adminPort}/api/status`;
    assert.equal(
      (await rawRequest(url, { headers: { authorization: basic('admin', generated) } })).status,
      200,
    );
    assert.equal(
      (await rawRequest(url, { headers: { authorization: basic('ops', 'ops-secret-123') } })).status,
      200,
    );
    for (const user of ['admin', 'ops']) {
      const empty = await rawRequest(url, { headers: { authorization: basic(user, '') } });
      assert.equal(empty.status, 401, `${user} with an empty password`);
    }
    const write = await rawRequest(`http://127.0.0.1:${config.adminPort}/api/routes/hello`, {
      method: 'PUT',
      headers: { authorization: basic('ops', ''), 'content-type': 'application/json' },
      body: JSON.stringify({ match: { path: '/pwned' }, policy: 'hello-policy' }),
    });
    assert.equal(write.status, 401);
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin credentials (H3): an absent admin.password still means a generated one', async () => {
  const gw = await startGateway('routes: []\n', {
    systemYaml: 'listener: { bind: 127.0.0.1, port: 0 }\nadmin: { port: 0, username: root }\n',
  });
  const config = gw.gateway.system.admin;
  assert.ok(config !== undefined);
  assert.equal(config.password, '');
  const printed: string[] = [];
  const admin = await startAdminServer(gw.gateway, config, silentLogger, { print: (l) => printed.push(l) });
  try {
    const generated = admin.generatedPassword;
    assert.ok(generated !== undefined && generated.length >= 24);
    assert.match(printed.join(''), /generated password for user 'root'/);
    const url = `${admin.url}/api/status`;
    assert.equal(
      (await rawRequest(url, { headers: { authorization: basic('root', generated) } })).status,
      200,
    );
    assert.equal((await rawRequest(url, { headers: { authorization: basic('root', '') } })).status, 401);
  } finally {
    await admin.close();
    await gw.stop();
  }
});
