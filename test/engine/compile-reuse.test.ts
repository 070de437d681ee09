import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { checkGatewayShape, type GatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { compileGateway, compileGatewayAsync, type Runtime } from '../../src/engine/compile.js';
import { createGatewayScope } from '../../src/observability/gateway-scope.js';
import { templateFactory } from '../../src/engine/templates.js';
import { silentLogger } from '../../src/core/logger.js';
import { definePlugin, READS_FILE } from '../../src/core/plugin.js';
import { testRegistry } from '../support/test-plugins.js';

/**
 * A reload keeps the compiled form of every policy it does not change (src/engine/compile.ts,
 * `reusable`): the same node instances keep serving, keep their counters, and are closed only
 * when no runtime holds them any more.
 */
let created = 0;
let closed = 0;
const closable = definePlugin({
  type: 'test-closable',
  category: 'test',
  description: 'Counts creations and closes; any config (`model_path` names a file it reads).',
  schema: { type: 'object', properties: { model_path: { type: 'string', [READS_FILE]: true } } },
  outputs: { success: { kind: 'success' } },
  create() {
    created++;
    return {
      run: () => 'success' as const,
      close: () => {
        closed++;
      },
    };
  },
});
const registry = new Map([...testRegistry, ['test-closable', closable]]);
const env: NodeJS.ProcessEnv = {};
const scope = createGatewayScope();

function config(yaml: string): GatewayConfig {
  return checkGatewayShape(parse(yaml));
}

function policy(name: string, nodeConfig = '{ n: 1 }'): string {
  return `
  - name: ${name}
    nodes:
      - { id: l, type: listener }
      - { id: c, type: test-closable, config: ${nodeConfig} }
      - { id: m, type: mocking, config: { response_example: ${name} } }
      - { id: out, type: client }
    edges:
      - { from: l.out, to: c.in }
      - { from: c.success, to: m.in }
      - { from: m.success, to: out.in }`;
}

function gateway(policies: string[], extra = ''): GatewayConfig {
  const names = policies.map((p) => /name: (\S+)/.exec(p)![1]!);
  const routes = names.map((n) => `  - { name: r-${n}, match: { path: /${n} }, policy: ${n} }`).join('\n');
  return config(`routes:\n${routes}\npolicies:${policies.join('')}\n${extra}`);
}

function compile(c: GatewayConfig, previous?: Runtime): Promise<Runtime> {
  return compileGatewayAsync(c, {
    registry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
    scope,
    previous,
  });
}

test('a reload keeps the compiled form of unchanged policies and compiles the changed one', async () => {
  const first = await compile(gateway([policy('a'), policy('b'), policy('c')]));
  assert.equal(first.compiled, 3);
  first.policies.get('a')!.nodes.get('c')!.stats.runs = 7;
  const second = await compile(gateway([policy('a'), policy('b', '{ n: 2 }'), policy('c')]), first);
  assert.equal(second.compiled, 1);
  assert.equal(second.policies.get('a'), first.policies.get('a'));
  assert.equal(second.policies.get('c'), first.policies.get('c'));
  assert.notEqual(second.policies.get('b'), first.policies.get('b'));
  assert.equal(second.policies.get('a')!.nodes.get('c')!.stats.runs, 7, 'counters carry over');
  assert.equal(second.router.match('GET', 'h', '/a', {})?.target.policy, first.policies.get('a'));

  const closedBefore = closed;
  await first.close();
  assert.equal(closed - closedBefore, 1, 'retiring the old runtime closes only what it alone held (b)');
  await second.close();
  assert.equal(closed - closedBefore, 4, 'the last holder closes the carried-over policies');
});

test('a changed shared section, a file-reading node or another gateway scope compiles every policy again', async () => {
  const base = gateway([policy('a'), policy('b')]);
  const first = await compile(base);
  const shared = `plugin_configs:\n  - { name: s, type: test-closable, config: { x: 1 } }\n`;
  assert.equal((await compile(gateway([policy('a'), policy('b')], shared), first)).compiled, 2);
  assert.equal(
    (await compile(gateway([policy('a'), policy('b')], 'consumers:\n  - { name: alice }\n'), first)).compiled,
    2,
  );

  // A node naming a file (a key its schema marks READS_FILE) reads it when created: it may have changed since.
  const withFile = await compile(gateway([policy('a', '{ model_path: ./m.conf }'), policy('b')]));
  const again = await compile(gateway([policy('a', '{ model_path: ./m.conf }'), policy('b')]), withFile);
  assert.equal(again.compiled, 1);
  assert.notEqual(again.policies.get('a'), withFile.policies.get('a'));
  assert.equal(again.policies.get('b'), withFile.policies.get('b'));

  // Dry runs and other gateways (another scope) never take over a runtime's nodes.
  const other = await compileGatewayAsync(base, {
    registry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
    scope: createGatewayScope(),
    previous: first,
  });
  assert.equal(other.compiled, 2);
  const sync = compileGateway(base, {
    registry,
    logger: silentLogger,
    env,
    templateFactory: templateFactory(env),
  });
  assert.equal(sync.compiled, 2);
});

test('a rejected reload leaves the running runtime’s policies open', async () => {
  const first = await compile(gateway([policy('a'), policy('b')]));
  const createdBefore = created;
  const closedBefore = closed;
  const broken = gateway([policy('a'), policy('b', '{ n: 2 }'), policy('z')]);
  broken.routes.push({ name: 'r-missing', match: { path: '/missing' }, policy: 'nope' });
  await assert.rejects(compile(broken, first), (err: unknown) => {
    assert.ok(err instanceof ConfigRejected);
    assert.deepEqual(
      err.issues.map((i) => i.path),
      ['routes[3].policy'],
    );
    return true;
  });
  // b (changed) and z were built and then closed; a was taken over and must stay open.
  assert.equal(created - createdBefore, 2);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closed - closedBefore, 2);
  const again = await compile(gateway([policy('a'), policy('b')]), first);
  assert.equal(again.compiled, 0);
  assert.equal(again.policies.get('a'), first.policies.get('a'));
});
