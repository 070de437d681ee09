import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import type { Context } from '../../../src/core/context.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import {
  upstream,
  type UpstreamConfig,
  type UpstreamNode,
  type UpstreamTargetState,
} from '../../../src/plugins/core/upstream.js';
import { instantiate, pluginEnv, type TestEnvOptions, type TestPluginEnv } from '../../support/plugin-env.js';

const created: UpstreamNode[] = [];

/** Creates an upstream node the way the compiler would (schema defaults first); closed by `closeAll`. */
export function createUpstream(
  config: UpstreamConfig | Record<string, unknown>,
  options: TestEnvOptions = {},
): { node: UpstreamNode; env: TestPluginEnv } {
  const env = pluginEnv(options);
  const node = instantiate(upstream, config, env) as UpstreamNode;
  created.push(node);
  return { node, env };
}

/** Closes every node created here and the shared pools (for `after`). */
export async function closeAll(): Promise<void> {
  for (const node of created.splice(0)) node.close();
  await closeAllPools();
}

/** The `x-origin` header of the response: which origin answered. */
export function answeredBy(ctx: Context): string {
  const name = ctx.response.headers['x-origin'];
  assert.equal(typeof name, 'string', 'response has no x-origin header');
  return name as string;
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Parsed JSON body of a buffered response from the `echo` origin handler. */
export function echoed(ctx: Context): {
  origin: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
} {
  assert.ok(ctx.response.body !== null, 'response has no buffered body');
  return JSON.parse(ctx.response.body.toString('utf8')) as ReturnType<typeof echoed>;
}

/** Target states by address. */
export function stateOf(node: UpstreamNode, address: string): UpstreamTargetState {
  const state = node.targetStates().find((s) => s.address === address);
  assert.ok(state !== undefined, `no target ${address}`);
  return state;
}
