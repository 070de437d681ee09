import { isAbsolute, resolve } from 'node:path';
import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';
import { McpAccess, type McpAccessRuleConfig } from './mcp-proxy-access.js';
import { mcpMetrics, McpProxyNode } from './mcp-proxy-node.js';
import { Upstream, type UpstreamSpec } from './mcp-proxy-upstream.js';

interface McpServerConfig {
  name: string;
  url?: string;
  headers?: Record<string, string>;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

interface McpProxyConfig {
  servers: McpServerConfig[];
  access: McpAccessRuleConfig[];
  timeout_ms: number;
  connect_timeout_ms: number;
}

/**
 * The environment variable holding the commands stdio servers may run: comma-separated, each
 * exactly as `command` names it (`node,npx,/opt/mcp/bin/files`), or `*` for any. A stdio server
 * runs a program on the gateway host, so the operator — not whoever may write the configuration
 * (Admin API, MCP write tools, etcd) — decides which.
 */
export const STDIO_ALLOW_LIST = 'SWITCHYARD_MCP_COMMANDS';

export function stdioAllowed(command: string, list: string | undefined): boolean {
  if (list === undefined) return false;
  const names = list
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.includes('*') || names.includes(command);
}

/**
 * Variables that make an allowed program load or run something else (the dynamic loader, the
 * command lookup, interpreter start-up hooks, npx's registry): with them a config writer could
 * get around the command list, so only `*` lets a config set them.
 */
const LOADER_VARIABLE =
  /^(PATH|LD_\w*|DYLD_\w*|NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|PYTHON(STARTUP|PATH|HOME|INSPECT|USERBASE)|PERL5?(OPT|LIB)|RUBY(OPT|LIB)|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH|GIT_\w*|NPM_CONFIG_\w*|YARN_\w*|COREPACK_\w*|UV_\w*|PIP_\w*)$/i;

function loaderVariable(env: Record<string, string> | undefined): string | undefined {
  return Object.keys(env ?? {}).find((name) => LOADER_VARIABLE.test(name));
}

/** A server name is the tool prefix up to the first `_`, so it holds none. */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9.-]{0,63}$/;

const globList = {
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: 'Globs on prefixed tool names: * any run of characters, ? one character.',
} as const;

/**
 * The gateway as one MCP server (Streamable HTTP) in front of several upstream MCP servers
 * (Streamable HTTP or stdio processes it supervises), tools and prompts prefixed `<server>_`,
 * with allow/deny rules on tool names per consumer or group.
 *
 * @example
 * ```yaml
 * - { id: auth, type: key-auth, config: { use_consumers: true } }
 * - id: mcp
 *   type: mcp-proxy
 *   config:
 *     servers:
 *       - { name: docs, url: 'http://127.0.0.1:9000/mcp', headers: { authorization: 'Bearer …' } }
 *       - { name: files, command: node, args: [files-server.mjs] }
 *     access:
 *       - { group: interns, deny: ['files_write*'] }
 * ```
 */
export const mcpProxy = definePlugin({
  type: 'mcp-proxy',
  category: 'ai',
  description:
    'Serve MCP (Streamable HTTP) in front of upstream MCP servers (Streamable HTTP or supervised stdio processes): their tools, prompts and resources as one server, names prefixed <server>_, tool allow/deny per consumer or group.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['servers'],
    properties: {
      servers: {
        type: 'array',
        minItems: 1,
        description: 'Upstream MCP servers: each with url (Streamable HTTP) or command (stdio).',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: {
            name: {
              type: 'string',
              minLength: 1,
              description:
                "Prefix of the server's tool and prompt names (<name>_tool); letters, digits, '.', '-'.",
            },
            url: { type: 'string', minLength: 1, description: 'Streamable HTTP endpoint of the server.' },
            headers: {
              type: 'object',
              additionalProperties: { type: 'string' },
              description:
                'Headers sent to a url server (e.g. authorization); credential-shaped ones are masked in the Admin API.',
            },
            command: {
              type: 'string',
              minLength: 1,
              description: 'Program of a stdio server, started by the gateway.',
            },
            args: { type: 'array', items: { type: 'string' }, default: [], description: 'Its arguments.' },
            env: {
              type: 'object',
              additionalProperties: { type: 'string' },
              default: {},
              description: "Environment added to the SDK's safe default (PATH, HOME, …) for the process.",
            },
            cwd: {
              type: 'string',
              minLength: 1,
              description: "Working directory of the process (relative: to gateway.yaml's directory).",
            },
          },
        },
      },
      access: {
        type: 'array',
        default: [],
        description:
          'Tool access rules: a rule applies to its consumer, its group, or (naming neither) everyone; a deny match refuses, and applying allow lists must match.',
        items: {
          type: 'object',
          additionalProperties: false,
          properties: {
            consumer: { type: 'string', minLength: 1, description: 'Consumer name the rule applies to.' },
            group: { type: 'string', minLength: 1, description: 'Consumer group the rule applies to.' },
            allow: globList,
            deny: globList,
          },
        },
      },
      timeout_ms: {
        type: 'integer',
        minimum: 1,
        default: 60_000,
        description: 'Deadline of one upstream request (a tool call, a listing page).',
      },
      connect_timeout_ms: {
        type: 'integer',
        minimum: 1,
        default: 10_000,
        description: 'Deadline of connecting to an upstream (process start and MCP initialize).',
      },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description:
        'ctx.response holds the MCP answer (JSON-RPC; a GET or DELETE gets 405: the server is stateless).',
    },
  },
  readsResponseBody: () => false,
  create(config: McpProxyConfig, env: PluginEnv): McpProxyNode {
    const access = new McpAccess(config.access);
    const seen = new Set<string>();
    const specs = config.servers.map((s, i) => serverSpec(s, `servers[${i}]`, seen, env));
    const where = { policy: env.policy, node: env.nodeId };
    const upstreams = specs.map(
      (spec) =>
        new Upstream(spec, { logger: env.logger, where, connectTimeoutMs: config.connect_timeout_ms }),
    );
    return new McpProxyNode({
      upstreams,
      access,
      timeoutMs: config.timeout_ms,
      metrics: mcpMetrics(env.scope),
      where,
      logger: env.logger,
    });
  },
});

function serverSpec(s: McpServerConfig, at: string, seen: Set<string>, env: PluginEnv): UpstreamSpec {
  if (!SERVER_NAME.test(s.name))
    throw new ConfigError(`${at}.name`, "must be letters, digits, '.' or '-' (the tool prefix ends at '_')");
  if (seen.has(s.name)) throw new ConfigError(`${at}.name`, `'${s.name}' names two servers`);
  seen.add(s.name);
  if ((s.url === undefined) === (s.command === undefined))
    throw new ConfigError(at, 'needs exactly one of url (Streamable HTTP) and command (stdio)');
  if (s.url !== undefined) {
    for (const key of ['cwd'] as const)
      if (s[key] !== undefined) throw new ConfigError(`${at}.${key}`, 'applies to command servers only');
    if ((s.args ?? []).length > 0 || Object.keys(s.env ?? {}).length > 0)
      throw new ConfigError(at, 'args and env apply to command servers only');
    let url: URL;
    try {
      url = new URL(s.url);
    } catch {
      throw new ConfigError(`${at}.url`, `'${s.url}' is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ConfigError(`${at}.url`, 'must be http or https');
    if (url.username !== '' || url.password !== '')
      throw new ConfigError(`${at}.url`, 'must not carry credentials; use headers');
    return { name: s.name, kind: 'http', url, headers: s.headers ?? {} };
  }
  if (s.headers !== undefined) throw new ConfigError(`${at}.headers`, 'applies to url servers only');
  const cwd =
    s.cwd === undefined
      ? undefined
      : isAbsolute(s.cwd)
        ? s.cwd
        : resolve(env.configDir ?? process.cwd(), s.cwd);
  const command = s.command!;
  let refused: string | undefined;
  const list = process.env[STDIO_ALLOW_LIST];
  const loader = list?.split(',').some((n) => n.trim() === '*') === true ? undefined : loaderVariable(s.env);
  if (!stdioAllowed(command, list)) {
    refused = `command '${command}' is not in ${STDIO_ALLOW_LIST}: the operator has not allowed it to run on the gateway host`;
  } else if (loader !== undefined) {
    refused = `env ${loader} can change what the program loads or runs; it is refused unless ${STDIO_ALLOW_LIST} is '*'`;
  }
  if (refused !== undefined) {
    const key = loader !== undefined && stdioAllowed(command, list) ? `${at}.env.${loader}` : `${at}.command`;
    env.warn(key, `${refused}; the server stays down (docs/plugins/mcp-proxy.md#stdio-servers)`);
  }
  return {
    name: s.name,
    kind: 'stdio',
    command,
    ...(refused === undefined ? {} : { refused }),
    args: s.args ?? [],
    env: s.env ?? {},
    ...(cwd === undefined ? {} : { cwd }),
  };
}
