import assert from 'node:assert/strict';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import type { Context } from '../../src/core/context.js';
import { ConfigError } from '../../src/core/plugin.js';

/** Asserts that `build` throws a ConfigError at `path` (a plugin's own load-time check). */
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
