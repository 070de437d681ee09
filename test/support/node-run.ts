import assert from 'node:assert/strict';
import type { Context } from '../../src/core/context.js';
import { NodeError } from '../../src/core/errors.js';
import type { NodeInstance, PortResult } from '../../src/core/plugin.js';
import { templateFor } from '../../src/template/index.js';
import { pluginEnv, type TestEnvOptions, type TestPluginEnv } from './plugin-env.js';

export { assertConfigError, assertSchemaRejects } from './assertions.js';

/** A plugin env whose templates are compiled for real; template warnings land in `warnings`. */
export function templatedEnv(options: TestEnvOptions = {}, vars: NodeJS.ProcessEnv = {}): TestPluginEnv {
  const env = pluginEnv(options);
  const template = templateFor(
    { policy: env.policy, node: env.nodeId },
    (message) => env.warnings.push({ key: 'template', message }),
    vars,
  );
  return Object.assign(env, { template });
}

/** Runs a node that must answer without I/O and returns its port. */
export function runNow<P extends string>(node: NodeInstance<P>, ctx: Context): PortResult<P> {
  const port = node.run(ctx);
  assert.equal(typeof port, 'string', 'expected a synchronous run');
  return port as PortResult<P>;
}

/** Runs the node and asserts it left through `success`. */
export async function runOk(node: NodeInstance<'success'>, ctx: Context): Promise<void> {
  assert.equal(await node.run(ctx), 'success');
}

/** Runs the node expecting a NodeError with `code` and `status`; returns it. */
export async function failsWith(
  node: NodeInstance,
  ctx: Context,
  code: string,
  status: number,
): Promise<NodeError> {
  let caught: unknown;
  try {
    await node.run(ctx);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof NodeError, `expected NodeError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(caught.status, status, caught.message);
  return caught;
}

export const bodyText = (ctx: Context): string => ctx.response.body?.toString('utf8') ?? '';
