import assert from 'node:assert/strict';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import type { Context } from '../../../src/engine/context.js';
import { ConfigError, type NodeInstance, type PortResult } from '../../../src/plugins/define.js';
import { templateFor } from '../../../src/template/index.js';
import { pluginEnv, type TestEnvOptions, type TestPluginEnv } from '../../support/plugin-env.js';

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

/** Runs a node that must answer synchronously (no I/O) and returns its port. */
export function runSync<P extends string>(node: NodeInstance<P>, ctx: Context): PortResult<P> {
  const port = node.run(ctx);
  assert.equal(typeof port, 'string', 'expected a synchronous run');
  return port as PortResult<P>;
}
