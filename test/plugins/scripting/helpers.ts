import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { checkGatewayShape } from '../../../src/config/gateway.js';
import { ConfigRejected } from '../../../src/config/schema-validate.js';
import { compileGateway, type Runtime } from '../../../src/engine/compile.js';
import { NodeError } from '../../../src/core/errors.js';
import { templateFactory } from '../../../src/engine/templates.js';
import { silentLogger } from '../../../src/core/logger.js';
import { ConfigError } from '../../../src/core/plugin.js';
import { registry } from '../../../src/plugins/index.js';
import { tempDir } from '../../support/temp-dir.js';

/** Compiles a gateway.yaml text as the gateway would, with `configDir` as the folder of gateway.yaml. */
export function compileYaml(yaml: string, configDir?: string): Runtime {
  return compileGateway(checkGatewayShape(parse(yaml)), {
    registry,
    logger: silentLogger,
    env: {},
    templateFactory: templateFactory({}),
    configDir,
  });
}

/** The messages of a rejected compile. */
export function compileIssues(yaml: string, configDir?: string): string[] {
  try {
    void compileYaml(yaml, configDir).close();
  } catch (err) {
    assert.ok(err instanceof ConfigRejected, `expected ConfigRejected, got ${String(err)}`);
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  assert.fail('expected the config to be rejected');
}

export function assertConfigError(build: () => unknown, path: string, message?: RegExp): void {
  assert.throws(build, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.path, path);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

/** Runs `run` (a node's run: sync or a promise) and returns the NodeError it throws or rejects with. */
export async function nodeError(run: () => unknown): Promise<NodeError> {
  try {
    await run();
  } catch (err) {
    assert.ok(err instanceof NodeError, `expected a NodeError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the node to fail');
}

/**
 * A gateway folder laid out like a deployment: `<root>/config/` (pass it as
 * configDir, or write gateway.yaml into it) and `<root>/plugins/` with `files`.
 */
export function deployment(files: Record<string, string>): {
  root: string;
  configDir: string;
  plugins: string;
  remove(): void;
} {
  const dir = tempDir('switchyard-lua-');
  const configDir = join(dir.path, 'config');
  const plugins = join(dir.path, 'plugins');
  mkdirSync(configDir);
  mkdirSync(plugins);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(plugins, name), text);
  return { root: dir.path, configDir, plugins, remove: () => dir.remove() };
}
