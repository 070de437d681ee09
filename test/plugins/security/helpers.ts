import assert from 'node:assert/strict';
import type { Context } from '../../../src/core/context.js';
import type { NodeInstance, PortResult } from '../../../src/core/plugin.js';
import { templateFor } from '../../../src/template/index.js';
import { pluginEnv, type TestEnvOptions, type TestPluginEnv } from '../../support/plugin-env.js';

export { assertConfigError, assertSchemaRejects, responseJson } from '../../support/assertions.js';

/** A plugin env whose templates are compiled for real (warnings land in `warnings`). */
export function liveEnv(options: TestEnvOptions = {}, vars: NodeJS.ProcessEnv = {}): TestPluginEnv {
  const env = pluginEnv(options);
  const template = templateFor(
    { policy: env.policy, node: env.nodeId },
    (message) => env.warnings.push({ key: 'template', message }),
    vars,
  );
  return Object.assign(env, { template });
}

/** Runs a node that must answer synchronously (no I/O) and returns its port. */
export function runSync<P extends string>(node: NodeInstance<P>, ctx: Context): PortResult<P> {
  const port = node.run(ctx);
  assert.equal(typeof port, 'string', 'expected a synchronous run');
  return port as PortResult<P>;
}
