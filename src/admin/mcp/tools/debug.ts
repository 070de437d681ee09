import { traceFilter } from '../../debug-routes.js';
import type { GatewayConfig, NodeConfig } from '../../../config/gateway.js';
import { renderTrace } from '../../../debug/render.js';
import { runSandbox } from '../../../debug/sandbox.js';
import type { Trace } from '../../../debug/trace-types.js';
import { debugDisabled, invalidInput, notFound, sandboxDisabled, toToolError } from '../errors.js';
import { maskSecrets, scrubSecretLiterals, secretLiterals } from '../secrets.js';
import { requiredStr } from './args.js';
import { testForTrace, traceTestYaml } from '../../trace-test.js';
import type { ToolArgs, ToolContext, ToolDef } from './types.js';

function requireDebug(ctx: ToolContext): void {
  if (!ctx.gateway.debug.enabled) throw debugDisabled();
}

/**
 * What a read token may see of a trace: traces are redacted by name when
 * captured, and for a read token every value the config masks (an injected
 * header under an innocent name, an env value it renders) is scrubbed too.
 */
function shown<T>(value: T, ctx: ToolContext): T {
  if (ctx.principal.scope === 'write') return value;
  const literals = secretLiterals(ctx.gateway.runtime.config, ctx.gateway.env, ctx.redaction);
  return scrubSecretLiterals(value, literals);
}

function findTrace(ctx: ToolContext, id: string): Trace {
  const trace = ctx.gateway.debug.store.get(id);
  if (trace === undefined) throw notFound('trace', id);
  return trace;
}

/** The stored config of a traced node; inner supernode nodes are traced as `<instance>/<inner>`. */
function nodeConfig(config: GatewayConfig, policyName: string, nodeId: string): NodeConfig | null {
  const policy = config.policies.find((p) => p.name === policyName);
  if (policy === undefined) return null;
  const direct = policy.nodes.find((n) => n.id === nodeId);
  if (direct !== undefined) return direct;
  const slash = nodeId.indexOf('/');
  if (slash === -1) return null;
  const instance = policy.nodes.find((n) => n.id === nodeId.slice(0, slash));
  const supernode = config.supernodes.find((s) => s.name === instance?.config?.['name']);
  return supernode?.nodes.find((n) => n.id === nodeId.slice(slash + 1)) ?? null;
}

/** The Admin API's filter parser, fed from tool arguments. */
function filterFrom(args: ToolArgs): ReturnType<typeof traceFilter> {
  const query = new URLSearchParams();
  for (const key of ['route', 'policy', 'status', 'source', 'limit']) {
    const v = args[key];
    if (typeof v === 'string' || typeof v === 'number') query.set(key, String(v));
  }
  if (!query.has('limit')) query.set('limit', '20');
  try {
    return traceFilter(query);
  } catch (err) {
    throw toToolError(err);
  }
}

export const debugTools: ToolDef[] = [
  {
    name: 'list_traces',
    scope: 'read',
    description:
      'Recent debug traces, newest first: id, route, policy, method, path, status, step and error counts, and the node that produced the response. Filters: route, policy, status, source (request — live traffic, alias live — or sandbox), limit (default 20). `retention` tells whether older traces were evicted. Needs debug.enabled; traffic is traced when it carries the debug header (x-switchyard-debug) or with debug.trace_all.',
    inputSchema: {
      type: 'object',
      properties: {
        route: { type: 'string' },
        policy: { type: 'string' },
        status: { type: 'integer', minimum: 0 },
        source: { type: 'string', enum: ['live', 'sandbox', 'request'] },
        limit: { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    run: (args, ctx) => {
      requireDebug(ctx);
      return shown(ctx.gateway.debug.store.list(filterFrom(args)), ctx);
    },
  },
  {
    name: 'get_trace',
    scope: 'read',
    description:
      'One trace: request, final status, response origin, and every step with node id and type, outcome, exit port, edge taken, duration and the context `changes` it made. Full context snapshots (`initial`, each step’s `after`) only with include_snapshots=true; use get_trace_step for one node. Secrets were redacted when the trace was captured.',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Trace id (list_traces, or the x-switchyard-trace-id header).' },
        include_snapshots: { type: 'boolean', description: 'Default false.' },
      },
      required: ['id'],
      additionalProperties: false,
    },
    run: (args, ctx) => {
      requireDebug(ctx);
      const rendered = renderTrace(findTrace(ctx, requiredStr(args, 'id')));
      if (args['include_snapshots'] === true) return shown(rendered, ctx);
      const { initial: _initial, steps, ...rest } = rendered;
      return shown(
        {
          ...rest,
          snapshots_omitted: true,
          steps: steps.map(({ after: _after, ...step }) => step),
        },
        ctx,
      );
    },
  },
  {
    name: 'get_trace_step',
    scope: 'read',
    description:
      'One step of a trace in full: the context before and after the node, the changes, outcome and port, and the node’s stored config. Pick the step by node_id or by zero-based index. Use it to answer "why did this node leave through this port?".',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Trace id.' },
        node_id: {
          type: 'string',
          description: 'Node id as shown in the trace (inner supernode nodes: instance/inner).',
        },
        index: { type: 'integer', minimum: 0, description: 'Zero-based step index; instead of node_id.' },
      },
      required: ['id'],
      additionalProperties: false,
    },
    run: (args, ctx) => {
      requireDebug(ctx);
      const trace = findTrace(ctx, requiredStr(args, 'id'));
      const rendered = renderTrace(trace);
      let index: number;
      if (typeof args['node_id'] === 'string') {
        index = trace.steps.findIndex((s) => s.node_id === args['node_id']);
        if (index === -1) throw notFound('step of node', args['node_id']);
      } else if (typeof args['index'] === 'number') {
        index = args['index'];
        if (index < 0 || index >= trace.steps.length) throw notFound('step index', String(index));
      } else throw invalidInput("give 'node_id' or 'index'");
      const step = rendered.steps[index] as (typeof rendered.steps)[number];
      const config = nodeConfig(ctx.gateway.runtime.config, trace.policy, step.node_id);
      return shown(
        {
          trace_id: trace.id,
          policy: trace.policy,
          index,
          before: index === 0 ? trace.initial : trace.steps[index - 1]?.after,
          step,
          node_config: config === null ? null : maskSecrets(config, ctx.redaction),
        },
        ctx,
      );
    },
  },
  {
    name: 'run_sandbox',
    // Nodes execute: outbound calls, store writes, scripts. That is admin power, not reading.
    scope: 'write',
    description:
      'Run a stored policy ({"policy": "<name>"}) or ad-hoc nodes ({"nodes": [{"id", "type", "config"}]}, chained by success between an implicit listener and client) on a synthetic request through the real engine, and get the trace. Nodes execute for real: outbound calls happen (unless `upstreams` mocks the node) and shared state (rate limits, caches, stores) may change; stored configuration does not. Ad-hoc nodes cannot read environment variables (`${NAME}`, `{{env.NAME}}` are refused). Needs a write token. `context` is flat: {"method", "path", "host", "headers": {...}, "query_params": {...}, "body", "message": {...}, "response": {"status_code", "headers", "body"}}. Needs debug.enabled and debug.sandbox.',
    inputSchema: {
      type: 'object',
      properties: {
        policy: { type: 'string', description: 'A stored policy name; exclusive with nodes.' },
        nodes: {
          type: 'array',
          items: {
            type: 'object',
            properties: { id: { type: 'string' }, type: { type: 'string' }, config: { type: 'object' } },
            required: ['type'],
          },
          description: 'Ad-hoc nodes; exclusive with policy.',
        },
        on_error: {
          type: 'string',
          enum: ['stop', 'client'],
          description:
            'Nodes mode: stop (default) leaves error ports unwired; client wires them to the client.',
        },
        context: {
          type: 'object',
          description: 'The synthetic request; every field optional ({} is GET /).',
        },
        upstreams: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            properties: {
              status: { type: 'integer' },
              headers: { type: 'object', additionalProperties: { type: 'string' } },
              body: { type: 'string' },
            },
            required: ['status'],
          },
          description:
            'Node id → {status, headers?, body?}: that upstream-type node answers the mock instead of calling its backend (the `upstreams:` of a policy test).',
        },
      },
      additionalProperties: false,
    },
    run: async (args, ctx) => {
      const debug = ctx.gateway.debug;
      if (!debug.enabled) throw debugDisabled();
      if (!debug.sandboxEnabled) throw sandboxDisabled();
      try {
        return await runSandbox(ctx.gateway, args);
      } catch (err) {
        throw toToolError(err);
      }
    },
  },
  {
    name: 'trace_to_test',
    // As POST /api/debug/traces/{id}/test: admin only, the test carries request details.
    scope: 'write',
    description:
      'Turn a stored debug trace into a policy test for `switchyard test` (a `tests:` entry): the request as it arrived, every upstream-type node answered by a mock of what it got, and expect {status, ports (the exact ports taken), ports_exact: true}. Redacted values (credentials) are left out and listed in `notes`. Answers {tests: [entry], notes, yaml}. Needs debug.enabled and a write token.',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'Trace id (list_traces, or the x-switchyard-trace-id header).' },
        name: {
          type: 'string',
          description: 'The test name; default "trace <id>: <method> <path> → <status>".',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    run: (args, ctx) => {
      requireDebug(ctx);
      const id = requiredStr(args, 'id');
      const name = args['name'];
      if (name !== undefined && (typeof name !== 'string' || name.trim() === ''))
        throw invalidInput('name must be a non-empty string');
      if (ctx.gateway.debug.store.get(id) === undefined) throw notFound('trace', id);
      try {
        const made = testForTrace(ctx.gateway, id, name);
        return { tests: [made.test], notes: made.notes, yaml: traceTestYaml(made) };
      } catch (err) {
        throw toToolError(err);
      }
    },
  },
];
