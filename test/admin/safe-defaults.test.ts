import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnGateway } from '../support/gateway-process.js';
import { basic } from './harness.js';
import { logLines, rawRequest, spawnedConfig, startSpawned, validate } from './spawned.js';

const adminListening = (output: string) =>
  logLines(output).find((l) => l.listener === 'admin API' && typeof l.bind === 'string');

test('admin safe defaults (M1): without admin.bind the admin listener binds 127.0.0.1 only', async () => {
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'logging: { level: info, format: json }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
      '',
    ].join('\n'),
  );
  const p = await startSpawned(config);
  try {
    const line = adminListening(p.output());
    assert.ok(line !== undefined, p.output());
    assert.equal(line.bind, '127.0.0.1');
    assert.equal(line.port, config.adminPort);
    const warned = logLines(p.output()).some((l) => String(l.msg).includes('plain HTTP'));
    assert.equal(warned, false, 'a loopback admin listener is not warned about');
    const status = await rawRequest(`http://127.0.0.1:${config.adminPort}/api/status`, {
      headers: { authorization: basic() },
    });
    assert.equal(status.status, 200);
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin safe defaults (M1): a non-loopback admin bind without TLS logs a warning at start', async () => {
  const config = await spawnedConfig(
    [
      'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
      'logging: { level: info, format: json }',
      'timeouts: { shutdown_timeout_seconds: 2 }',
      'admin: { bind: 0.0.0.0, port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
      '',
    ].join('\n'),
  );
  const p = await startSpawned(config);
  try {
    assert.equal(adminListening(p.output())?.bind, '0.0.0.0');
    const warning = logLines(p.output()).find((l) => String(l.msg).includes('plain HTTP'));
    assert.ok(warning !== undefined, p.output());
    assert.equal(warning.level, 40, 'pino warn');
    assert.equal(warning.bind, '0.0.0.0');
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin safe defaults (H3): an unset ${VAR} in admin.users[].password fails startup and validate, naming the key', async () => {
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

test('admin safe defaults (H3): ${VAR:-} resolving to empty, an empty value and unset MCP tokens are load errors too', async () => {
  const cases: [string, RegExp][] = [
    [
      'users: [{ username: ops, password: "${OPS_PASSWORD:-}" }]',
      /admin\.users\[0\]\.password: \$\{OPS_PASSWORD:-\} is not set/,
    ],
    ['users: [{ username: ops, password: "" }]', /admin\.users\[0\]\.password: must not be empty/],
    ['password: ${ADMIN_PASSWORD}', /admin\.password: \$\{ADMIN_PASSWORD\} is not set/],
    [
      'mcp: { enabled: true, tokens: [{ token: "${MCP_TOKEN}", scope: read }] }',
      /admin\.mcp\.tokens\[0\]\.token: \$\{MCP_TOKEN\} is not set/,
    ],
  ];
  for (const [extra, expected] of cases) {
    const config = await spawnedConfig(
      `listener: { bind: 127.0.0.1, port: @DATA_PORT@ }\nadmin: { port: @ADMIN_PORT@, username: admin, ${extra} }\n`,
    );
    try {
      const checked = validate(config, {
        OPS_PASSWORD: undefined,
        ADMIN_PASSWORD: undefined,
        MCP_TOKEN: undefined,
      });
      assert.equal(checked.status, 1, `${extra}\n${checked.output}`);
      assert.match(checked.output, expected);
    } finally {
      config.remove();
    }
  }
});

test('admin safe defaults (H3): admin.password ${ADMIN_PASSWORD:-} still generates a password; an empty password is refused', async () => {
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
