import type { PluginDefinition } from './define.js';
import { client } from './structural/client.js';
import { listener } from './structural/listener.js';
import { echo } from './core/echo.js';
import { mocking } from './core/mocking.js';
import { proxyRewrite } from './core/proxy-rewrite.js';
import { errorHandler } from './errors/error-handler.js';

type AnyPlugin = PluginDefinition<never, string>;

/** The only list of node types. Compiler, /api/plugins, the editor, MCP and docs all read it. */
const definitions: AnyPlugin[] = [listener, client, mocking, echo, proxyRewrite, errorHandler].map(
  (d) => d as unknown as AnyPlugin,
);

export const registry: ReadonlyMap<string, AnyPlugin> = new Map(definitions.map((d) => [d.type, d]));
