import assert from 'node:assert/strict';
import { buildConsumerIndex, type ConsumerIndex } from '../../../src/config/consumers.js';
import { checkGatewayShape, type ConsumerConfig } from '../../../src/config/gateway.js';
import type { ConfigIssue } from '../../../src/config/schema-validate.js';
import type { Context } from '../../../src/core/context.js';
import type { NodeInstance } from '../../../src/core/plugin.js';
import { pluginEnv, type TestEnvOptions, type TestPluginEnv } from '../../support/plugin-env.js';

export { assertConfigError, assertSchemaRejects, responseJson } from '../../support/assertions.js';

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

/** `Authorization: Basic …` for a user and password. */
export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}
