import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ConfigRejected, validateAgainst } from '../../../src/config/schema-validate.js';
import { upstream, type UpstreamNode } from '../../../src/plugins/core/upstream.js';
import { ConfigError } from '../../../src/core/plugin.js';
import { pluginEnv } from '../../support/plugin-env.js';
import { closeAll, createUpstream } from './helpers.js';

after(closeAll);

const target = { host: '127.0.0.1', port: 9 };

/** `create` on a config that went through the schema; returns the ConfigError it threw. */
function configError(config: Record<string, unknown>): ConfigError {
  try {
    createUpstream(config);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('config was accepted');
}

/** `create` without the schema pass, as a defensive second line. */
function createError(config: Record<string, unknown>): ConfigError {
  try {
    (upstream.create(config, pluginEnv()) as UpstreamNode).close();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('config was accepted');
}

function schemaIssues(config: Record<string, unknown>): string[] {
  return validateAgainst(upstream.schema, structuredClone(config), '').map((i) => `${i.path}: ${i.message}`);
}

test('upstream config: schema defaults are applied', () => {
  const config: Record<string, unknown> = { targets: [target] };
  assert.deepEqual(validateAgainst(upstream.schema, config, ''), []);
  assert.equal(config.timeout_ms, 60000);
  assert.equal(config.stream_idle_timeout_ms, 60000);
  assert.equal(config.pass_host, 'node');
  assert.equal(config.ssl_verify, true);
  assert.equal(config.hash_on, 'remote_addr');
  assert.deepEqual(config.health_check, { passive: { max_fails: 3, fail_timeout_seconds: 10 } });
  assert.deepEqual(config.targets, [{ ...target, weight: 1 }]);
});

test('upstream config: active health check defaults', () => {
  const config: Record<string, unknown> = { targets: [target], health_check: { active: {} } };
  assert.deepEqual(validateAgainst(upstream.schema, config, ''), []);
  assert.deepEqual((config.health_check as { active: unknown }).active, {
    path: '/',
    interval_ms: 5000,
    timeout_ms: 2000,
    healthy_statuses: [200, 302],
    unhealthy_threshold: 3,
    healthy_threshold: 2,
  });
});

test('upstream config: an empty pool is a load error', () => {
  assert.ok(schemaIssues({ targets: [] }).some((i) => i.startsWith('targets:')));
  assert.equal(createError({ targets: [] }).path, 'targets');
  assert.throws(() => createUpstream({ targets: [] }), ConfigRejected);
});

test('upstream config: an invalid target entry is rejected and named, not skipped', () => {
  assert.ok(
    schemaIssues({ targets: [target, { host: 'b', port: 70000 }] }).some((i) =>
      i.startsWith('targets[1].port'),
    ),
  );
  assert.ok(schemaIssues({ targets: [target, { port: 80 }] }).some((i) => i.startsWith('targets[1].host')));
  assert.equal(createError({ targets: [target, { host: 'b', port: 70000 }] }).path, 'targets[1].port');
  assert.equal(createError({ targets: [target, 'b:80'] }).path, 'targets[1]');
  assert.equal(createError({ targets: [{ host: 'bad host', port: 80 }] }).path, 'targets[0].host');
  assert.equal(
    createError({ targets: [target, { host: 'x', port: 1, weight: -1 }] }).path,
    'targets[1].weight',
  );
});

test('upstream config: duplicate targets are rejected', () => {
  const err = configError({ targets: [target, { ...target }] });
  assert.equal(err.path, 'targets[1]');
  assert.match(err.message, /targets\[0\]/);
});

test('upstream config: weight 0 drains a target, but not all of them', () => {
  createUpstream({ targets: [target, { host: '127.0.0.1', port: 10, weight: 0 }] });
  assert.equal(configError({ targets: [{ ...target, weight: 0 }] }).path, 'targets');
});

test('upstream config: unknown load_balancing → "Unknown load_balancing \'random\' — supported: …"', () => {
  const err = configError({ targets: [target], load_balancing: 'random' });
  assert.equal(err.path, 'load_balancing');
  assert.equal(
    err.message,
    "Unknown load_balancing 'random' — supported: round_robin, least_connections, ip_hash, chash, ewma",
  );
  assert.equal(configError({ targets: [target], load_balancer: 'random' }).path, 'load_balancer');
});

test('upstream config: every balancer spelling is accepted', () => {
  for (const name of [
    'round_robin',
    'round-robin',
    'least_connections',
    'least-conn',
    'ip_hash',
    'chash',
    'ewma',
  ]) {
    createUpstream({ targets: [target], load_balancing: name });
  }
});

test('upstream config: load_balancing wins over the legacy key, with a warning', () => {
  const { env } = createUpstream({ targets: [target], load_balancing: 'ewma', load_balancer: 'chash' });
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['load_balancer'],
  );
});

test('upstream config: unsupported hash_on is rejected', () => {
  assert.equal(
    configError({ targets: [target], load_balancing: 'chash', hash_on: 'server_name' }).path,
    'hash_on',
  );
  for (const hashOn of [
    'remote_addr',
    '$remote_addr',
    'uri',
    'request_uri',
    'http_x_user',
    'arg_id',
    'cookie_sid',
  ]) {
    createUpstream({ targets: [target], load_balancing: 'chash', hash_on: hashOn });
  }
});

test('upstream config: ca_cert_path with ssl_verify false is incompatible', () => {
  const err = configError({
    targets: [target],
    tls: true,
    ssl_verify: false,
    ca_cert_path: '/etc/ssl/ca.pem',
  });
  assert.equal(err.path, 'ca_cert_path');
});

test('upstream config: client_cert_path and client_key_path go together', () => {
  assert.equal(
    configError({ targets: [target], tls: true, client_cert_path: '/c.pem' }).path,
    'client_key_path',
  );
  assert.equal(
    configError({ targets: [target], tls: true, client_key_path: '/k.pem' }).path,
    'client_cert_path',
  );
});

test('upstream config: unreadable TLS files are load errors naming the key', () => {
  const err = configError({ targets: [target], tls: true, ca_cert_path: '/nonexistent/ca.pem' });
  assert.equal(err.path, 'ca_cert_path');
});

test('upstream config: tls and scheme must agree', () => {
  assert.equal(configError({ targets: [target], tls: true, scheme: 'http' }).path, 'tls');
  assert.equal(configError({ targets: [target], tls: false, scheme: 'https' }).path, 'tls');
});

test('upstream config: TLS keys on an http upstream are ignored with a warning', () => {
  const { env } = createUpstream({ targets: [target], ca_cert_path: '/nonexistent/ca.pem' });
  assert.deepEqual(
    env.warnings.map((w) => w.key),
    ['ca_cert_path'],
  );
});

test("upstream config: pass_host 'rewrite' needs upstream_host", () => {
  assert.equal(configError({ targets: [target], pass_host: 'rewrite' }).path, 'upstream_host');
  assert.ok(schemaIssues({ targets: [target], pass_host: 'keep' }).some((i) => i.startsWith('pass_host')));
});

test('upstream config: unknown keys are rejected by the schema', () => {
  assert.ok(schemaIssues({ targets: [target], timeout: 5 }).some((i) => i === 'timeout: unknown key'));
});
