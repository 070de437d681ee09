import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { parse } from 'yaml';
import { checkGatewayShape, type GatewayConfig } from '../../src/config/gateway.js';
import { compileGatewayAsync, type Runtime } from '../../src/engine/compile.js';
import { readsFiles } from '../../src/engine/file-keys.js';
import { templateFactory } from '../../src/engine/templates.js';
import { silentLogger } from '../../src/core/logger.js';
import { READS_FILE } from '../../src/core/plugin.js';
import { createGatewayScope } from '../../src/observability/gateway-scope.js';
import { closeAllPools } from '../../src/outbound/pool-registry.js';
import { registry } from '../../src/plugins/index.js';

/**
 * F1 (operator review): a reload recompiled every policy holding a config key named like a file
 * (`path`, `source`, `*_path`), so `health_check.active.path` threw away the health state of its
 * upstream on every reload. Only keys a node's schema marks READS_FILE count now.
 */
const env: NodeJS.ProcessEnv = {};
const scope = createGatewayScope();
const runtimes: Runtime[] = [];
after(async () => {
  for (const r of runtimes) await r.close();
  await closeAllPools();
});

function compile(yaml: string, previous?: Runtime): Promise<Runtime> {
  const config: GatewayConfig = checkGatewayShape(parse(yaml));
  return compileGatewayAsync(config, {
    registry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
    scope,
    previous,
  }).then((r) => {
    runtimes.push(r);
    return r;
  });
}

/** A policy `name` whose upstream node has `upstream` (flow YAML) as its config, `extra` nodes before it. */
function policy(name: string, upstream: string, refBeside = ''): string {
  return `
  - name: ${name}
    nodes:
      - { id: l, type: listener }
      - { id: up, type: upstream, ${refBeside}config: ${upstream} }
      - { id: out, type: client }
    edges:
      - { from: l.out, to: up.in }
      - { from: up.success, to: out.in }`;
}

function gateway(policies: string[], head = ''): string {
  const names = policies.map((p) => /name: (\S+)/.exec(p)![1]!);
  const routes = names.map((n) => `  - { name: r-${n}, match: { path: /${n} }, policy: ${n} }`).join('\n');
  return `${head}routes:\n${routes}\npolicies:${policies.join('')}\n`;
}

const TARGET = '{ host: 127.0.0.1, port: 9 }';
const PROBED = `{ targets: [${TARGET}], health_check: { active: { path: /healthz, interval_ms: 60000 } } }`;

test('F1: a reload keeps a policy whose upstream has health_check.active.path (a URL path, not a file)', async () => {
  const first = await compile(gateway([policy('a', PROBED), policy('b', `{ targets: [${TARGET}] }`)]));
  assert.equal(first.compiled, 2);
  // An unrelated edit: only the routes change.
  const second = await compile(
    gateway([policy('a', PROBED), policy('b', `{ targets: [${TARGET}] }`)]).replace('/b }', '/b2 }'),
    first,
  );
  assert.ok(second.router.match('GET', 'h', '/b2', {}), 'the route edit applied');
  assert.equal(second.compiled, 0, 'no policy recompiled');
  assert.equal(second.policies.get('a'), first.policies.get('a'), 'the probed upstream kept its node');
});

test('F1: a key the schema marks as a file still recompiles, also through config_ref', async () => {
  // ca_cert_path is READS_FILE (read when the node is created); the scheme is http, so it is only warned about.
  const withCa = `{ targets: [${TARGET}], ca_cert_path: ./ca.pem }`;
  const first = await compile(gateway([policy('a', withCa), policy('b', PROBED)]));
  const again = await compile(gateway([policy('a', withCa), policy('b', PROBED)]), first);
  assert.equal(again.compiled, 1);
  assert.notEqual(again.policies.get('a'), first.policies.get('a'));
  assert.equal(again.policies.get('b'), first.policies.get('b'));

  const shared = `plugin_configs:\n  - { name: tls-up, type: upstream, config: ${withCa} }\n`;
  const refs = gateway([policy('a', '{}', 'config_ref: tls-up, '), policy('b', PROBED)], shared);
  const third = await compile(refs, again);
  const fourth = await compile(refs, third);
  assert.equal(fourth.compiled, 1, 'the policy whose config_ref names a file is compiled again');
  assert.notEqual(fourth.policies.get('a'), third.policies.get('a'));
  assert.equal(fourth.policies.get('b'), third.policies.get('b'));
});

test('F1: readsFiles follows the schema: nested objects, arrays, anyOf; only annotated keys count', () => {
  const schema = {
    type: 'object',
    properties: {
      path: { type: 'string' },
      tls: { type: 'object', properties: { ca_file: { type: 'string', [READS_FILE]: true } } },
      scripts: { type: 'array', items: { anyOf: [{ type: 'string', [READS_FILE]: true }] } },
    },
  };
  assert.equal(readsFiles(schema, { path: '/x' }), false);
  assert.equal(readsFiles(schema, { tls: {} }), false);
  assert.equal(readsFiles(schema, { tls: { ca_file: 'ca.pem' } }), true);
  assert.equal(readsFiles(schema, { scripts: [] }), false);
  assert.equal(readsFiles(schema, { scripts: ['a.lua'] }), true);
  assert.equal(readsFiles({ type: 'object' }, { model_path: 'x', path: 'y' }), false);
  // The shipped types: the upstream's health-check path is not a file, its CA is.
  const upstream = registry.get('upstream')!.schema;
  assert.equal(readsFiles(upstream, { health_check: { active: { path: '/healthz' } } }), false);
  assert.equal(readsFiles(upstream, { ca_cert_path: 'ca.pem' }), true);
  assert.equal(readsFiles(registry.get('file-logger')!.schema, { path: 'access.log' }), false);
  assert.equal(readsFiles(registry.get('authz-casbin')!.schema, { model_path: 'm.conf' }), true);
  assert.equal(readsFiles(registry.get('forward-auth')!.schema, { tls: { ca_file: 'ca.pem' } }), true);
});
