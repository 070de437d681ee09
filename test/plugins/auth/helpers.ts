import assert from 'node:assert/strict';
import { buildConsumerIndex, type ConsumerIndex } from '../../../src/config/consumers.js';
import { checkGatewayShape, type ConsumerConfig } from '../../../src/config/gateway.js';
import { ConfigRejected, type ConfigIssue } from '../../../src/config/schema-validate.js';
import type { Context } from '../../../src/engine/context.js';
import { ConfigError, type NodeInstance } from '../../../src/plugins/define.js';
import { pluginEnv, type TestEnvOptions, type TestPluginEnv } from '../../support/plugin-env.js';

/** A consumer index as the compiler builds it, after the gateway schema accepted the section. */
export function consumerIndex(consumers: ConsumerConfig[], vars: NodeJS.ProcessEnv = {}): ConsumerIndex {
  const config = checkGatewayShape({ consumers: structuredClone(consumers) });
  const issues: ConfigIssue[] = [];
  const index = buildConsumerIndex(config.consumers, vars, issues);
  assert.deepEqual(issues, []);
  return index;
}

/** A plugin env holding these consumers. */
export function envWith(consumers: ConsumerConfig[], options: TestEnvOptions = {}): TestPluginEnv {
  return pluginEnv({ ...options, consumers: consumerIndex(consumers) });
}

/** Runs a node to its port, sync or async. */
export async function runNode(node: NodeInstance<string>, ctx: Context): Promise<string> {
  return await node.run(ctx);
}

/** Asserts that `build` throws a ConfigError at `path`. */
export function assertConfigError(build: () => unknown, path: string, message?: RegExp): void {
  assert.throws(build, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.path, path);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

/** Asserts that schema validation rejects the config with an issue at `path`. */
export function assertSchemaRejects(build: () => unknown, path: string): void {
  assert.throws(build, (err: unknown) => {
    assert.ok(err instanceof ConfigRejected, `expected ConfigRejected, got ${String(err)}`);
    assert.ok(
      err.issues.some((i) => i.path === path),
      `no issue at ${path}: ${JSON.stringify(err.issues)}`,
    );
    return true;
  });
}

/** The prepared response body parsed as JSON. */
export function responseJson(ctx: Context): unknown {
  return JSON.parse(ctx.response.body?.toString('utf8') ?? 'null');
}

/** `Authorization: Basic …` for a user and password. */
export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}
