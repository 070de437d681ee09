import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { catalogEntry, pluginCatalog } from '../../catalog.js';
import { registry } from '../../../plugins/index.js';
import { listVars } from '../../../template/index.js';
import { notFound } from '../errors.js';
import { maskSecrets } from '../secrets.js';
import { requiredStr } from './args.js';
import { NO_ARGS, type ToolDef } from './types.js';

const DOCS = new URL('../../../../docs/plugins/', import.meta.url);

/** The docs page of a node type (docs/plugins/<type>.md), or null when it has none. */
function docsPage(type: string): string | null {
  if (!/^[a-z0-9-]+$/.test(type)) return null;
  try {
    return readFileSync(new URL(`${type}.md`, DOCS), 'utf8');
  } catch {
    return null;
  }
}

/** Node types, variables, status and the whole config: what an agent reads before designing. */
export const catalogTools: ToolDef[] = [
  {
    name: 'list_node_types',
    scope: 'read',
    description:
      'Every node (plugin) type the gateway knows: type, category, description and its ports (input, and each output with kind success, outcome or error). Start here when designing a policy; call get_node_type for the config keys of one type.',
    inputSchema: NO_ARGS,
    run: () => ({
      node_types: pluginCatalog(registry).plugins.map(({ type, category, description, ports }) => ({
        type,
        category,
        description,
        ports,
      })),
    }),
  },
  {
    name: 'get_node_type',
    scope: 'read',
    description:
      'Full reference of one node type: description, ports (every success and outcome port must be wired), the JSON Schema of its config, the config fields rendered as templates, and its documentation page (Markdown with an example). The primary authoring tool.',
    inputSchema: {
      type: 'object',
      properties: { type: { type: 'string', description: 'Node type, as in `type:` of a node.' } },
      required: ['type'],
      additionalProperties: false,
    },
    run: (args) => {
      const type = requiredStr(args, 'type');
      const def = registry.get(type);
      if (def === undefined) throw notFound('node type', type);
      return { ...catalogEntry(def), docs: docsPage(def.type) };
    },
  },
  {
    name: 'list_vars',
    scope: 'read',
    description:
      'The variable catalog for plugin configs: `{{namespace.path}}` template paths (request.*, response.*, message.*, client.*, env.*) and the legacy `$var` forms, static and family (`$http_<name>`) entries with examples. Read it before writing a config value that should change per request.',
    inputSchema: NO_ARGS,
    run: () => listVars(),
  },
  {
    name: 'get_status',
    scope: 'read',
    description:
      'Gateway version, counts of routes, policies, supernodes, plugin configs, stores and consumers, the config source, uptime, whether debug mode and the sandbox are on, and the scope of the calling token.',
    inputSchema: NO_ARGS,
    run: async (_args, ctx) => {
      const status = (await ctx.admin('GET', '/api/status')).body as Record<string, unknown>;
      const debug = ctx.gateway.debug;
      return {
        ...status,
        debug: { enabled: debug.enabled, sandbox: debug.sandboxEnabled },
        mcp: { scope: ctx.principal.scope },
      };
    },
  },
  {
    name: 'export_config',
    scope: 'read',
    description:
      'The whole live gateway.yaml as YAML text: routes, policies, supernodes, plugin_configs, stores, consumers. `${ENV}` placeholders and config_ref stay as written; secret values are shown as <redacted>.',
    inputSchema: NO_ARGS,
    run: (_args, ctx) => stringify(maskSecrets(ctx.gateway.runtime.config, ctx.redaction), { lineWidth: 0 }),
  },
];
