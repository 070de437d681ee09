import type { EdgeConfig, GatewayConfig, NodeConfig, PolicyConfig } from '../config/gateway.js';
import { policySchema } from '../config/gateway.js';
import {
  ConfigRejected,
  formatIssues,
  validateAgainst,
  type ConfigIssue,
} from '../config/schema-validate.js';
import type { Runtime } from '../engine/compile.js';
import type { CompiledNode, CompiledPolicy } from '../core/graph-types.js';
import type { MockAnswer } from '../config/policy-tests.js';
import type { Context } from '../core/context.js';
import type { NodeInstance } from '../core/plugin.js';
import { runPolicy } from '../engine/run.js';
import type { Logger } from '../core/logger.js';
import type { PluginDefinition } from '../core/plugin.js';
import { environmentReferences } from '../template/env-references.js';
import type { RenderedTrace } from './render.js';
import { renderTrace } from './render.js';
import { StepRecorder } from './recorder.js';
import {
  parseSandboxContext,
  sandboxContext,
  SandboxInputError,
  type SandboxSeed,
} from './sandbox-context.js';
import type { DebugService } from './service.js';

/** Name of the policy synthesized from an ad-hoc node list. */
export const SANDBOX_POLICY = '__sandbox';

export const SANDBOX_WARNING =
  'nodes ran for real: outbound calls were made and shared state (rate limits, breakers, caches) may have changed';

/** Why a sandbox run did not happen; the Admin API sends `status` and `body` as they are. */
export class SandboxError extends Error {
  constructor(
    readonly status: 400 | 404 | 504,
    readonly body: Record<string, unknown>,
  ) {
    super(typeof body['error'] === 'string' ? body['error'] : `sandbox error ${status}`);
    this.name = 'SandboxError';
  }
}

export type OnError = 'stop' | 'client';

export interface SandboxRequest {
  mode: 'nodes' | 'policy';
  nodes?: NodeConfig[];
  policy?: string;
  onError: OnError;
  seed: SandboxSeed;
  /** Node id → the answer it gives instead of running (the `upstreams:` of a policy test). */
  mocks: Record<string, MockAnswer>;
}

export interface SandboxResult {
  mode: 'nodes' | 'policy';
  policy: string;
  warning: string;
  /** The node ids answered by their mock (none of them called out). */
  mocked: string[];
  stored_trace_id: string;
  trace: RenderedTrace;
}

/** What the sandbox needs of the gateway: the live config and runtime, and the one compiler. */
export interface SandboxHost {
  readonly runtime: Runtime;
  readonly logger: Logger;
  readonly debug: DebugService;
  compile(config: GatewayConfig): Runtime;
  /** The node types it compiles with (src/plugins/index.ts), for the ports of ad-hoc nodes. */
  readonly plugins: ReadonlyMap<string, PluginDefinition<never, string>>;
}

const REQUEST_FIELDS = new Set(['nodes', 'policy', 'on_error', 'context', 'upstreams']);
const MOCK_FIELDS = new Set(['status', 'headers', 'body']);

const badRequest = (error: string, details?: ConfigIssue[]): SandboxError =>
  new SandboxError(400, details === undefined ? { error } : { error, details });

/** Validates `POST /api/debug/sandbox` (docs/debugging.md#the-sandbox): exactly one of `nodes` or `policy`. */
export function parseSandboxRequest(body: Record<string, unknown>): SandboxRequest {
  for (const key of Object.keys(body)) {
    if (!REQUEST_FIELDS.has(key))
      throw badRequest(`unknown field '${key}' (expected nodes, policy, on_error, context or upstreams)`);
  }
  const hasNodes = body['nodes'] !== undefined && body['nodes'] !== null;
  const hasPolicy = body['policy'] !== undefined && body['policy'] !== null;
  if (hasNodes === hasPolicy) throw badRequest("provide exactly one of 'nodes' or 'policy'");
  const onError = body['on_error'] ?? 'stop';
  if (onError !== 'stop' && onError !== 'client') throw badRequest("on_error must be 'stop' or 'client'");
  let seed: SandboxSeed;
  try {
    seed = parseSandboxContext(body['context']);
  } catch (err) {
    if (err instanceof SandboxInputError) throw badRequest(err.message);
    throw err;
  }
  const mocks = parseMocks(body['upstreams']);
  if (hasPolicy) {
    const policy = body['policy'];
    if (typeof policy !== 'string' || policy === '') throw badRequest("'policy' must be a policy name");
    return { mode: 'policy', policy, onError, seed, mocks };
  }
  const nodes = body['nodes'];
  if (!Array.isArray(nodes)) throw badRequest("'nodes' must be a list of nodes");
  if (nodes.length === 0) throw badRequest("'nodes' must contain at least one node");
  return { mode: 'nodes', nodes: nodes.map(adHocNode), onError, seed, mocks };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `upstreams`: node id → `{status, headers?, body?}`, the format of a policy test's `upstreams:`. */
function parseMocks(raw: unknown): Record<string, MockAnswer> {
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw)) throw badRequest("'upstreams' must be an object of node id → {status, headers, body}");
  const mocks: Record<string, MockAnswer> = {};
  for (const [id, answer] of Object.entries(raw)) {
    const at = `upstreams.${id}`;
    if (!isRecord(answer)) throw badRequest(`${at} must be an object {status, headers, body}`);
    for (const key of Object.keys(answer))
      if (!MOCK_FIELDS.has(key))
        throw badRequest(`${at}: unknown field '${key}' (expected status, headers or body)`);
    const { status, headers, body } = answer;
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599)
      throw badRequest(`${at}.status must be an integer from 100 to 599`);
    if (
      headers !== undefined &&
      (!isRecord(headers) || Object.values(headers).some((v) => typeof v !== 'string'))
    )
      throw badRequest(`${at}.headers must be an object of name → string`);
    if (body !== undefined && typeof body !== 'string') throw badRequest(`${at}.body must be a string`);
    mocks[id] = {
      status,
      ...(headers === undefined ? {} : { headers: headers as Record<string, string> }),
      ...(body === undefined ? {} : { body }),
    };
  }
  return mocks;
}

/** A node that answers `answer` as its backend would (status, headers, body replace the response). */
function mockInstance(answer: MockAnswer): NodeInstance {
  return {
    run(ctx: Context) {
      ctx.response.headers = {};
      ctx.response.status = answer.status;
      for (const [name, value] of Object.entries(answer.headers ?? {}))
        ctx.response.headers[name.toLowerCase()] = value;
      ctx.response.setBody(answer.body ?? '');
      return 'success';
    },
  };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A copy of `policy` whose nodes named in `mocks` answer their mock instead of running; every
 * other node is the same instance (shared state, as without mocks). The live policy is untouched.
 */
export function withMocks(policy: CompiledPolicy, mocks: Record<string, MockAnswer>): CompiledPolicy {
  const unknown = Object.keys(mocks).filter((id) => !policy.nodes.has(id));
  if (unknown.length > 0)
    throw badRequest(
      `upstreams: no node '${unknown[0] as string}' in policy '${policy.name}' (its nodes: ${[...policy.nodes.keys()].join(', ')})`,
    );
  const copies = new Map<CompiledNode, CompiledNode>();
  const copy = (node: CompiledNode | undefined): CompiledNode | undefined => {
    if (node === undefined) return undefined;
    const done = copies.get(node);
    if (done !== undefined) return done;
    const answer = mocks[node.id];
    const clone: Mutable<CompiledNode> = {
      ...node,
      instance: answer === undefined ? node.instance : mockInstance(answer),
      next: {},
    };
    copies.set(node, clone);
    for (const [port, target] of Object.entries(node.next)) clone.next[port] = copy(target);
    clone.onError = copy(node.onError);
    return clone;
  };
  const nodes = new Map<string, CompiledNode>();
  for (const [id, node] of policy.nodes) nodes.set(id, copy(node) as CompiledNode);
  return { ...policy, entry: copy(policy.entry), errorHandler: copy(policy.errorHandler), nodes };
}

function adHocNode(raw: unknown, index: number): NodeConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest(`nodes[${index}] must be an object`);
  const node = { ...(raw as Record<string, unknown>) };
  if (typeof node['type'] !== 'string' || node['type'] === '')
    throw badRequest(`nodes[${index}].type must be a plugin type`);
  if (node['id'] === undefined || node['id'] === null || node['id'] === '')
    node['id'] = `${node['type']}-${index}`;
  const reads = environmentReads(node, `nodes[${index}]`);
  if (reads.length > 0) {
    const first = reads[0] as ConfigIssue;
    throw badRequest(
      `sandbox nodes cannot read environment variables: ${first.path} ${first.message}`,
      reads,
    );
  }
  return node as unknown as NodeConfig;
}

/**
 * `${NAME}` and `{{env.NAME}}` anywhere in a caller-submitted node (values and
 * keys). The caller is not the config author, so the process environment
 * (admin password, tokens from `${VAR}`) must not reach what it can read
 * back; stored configuration reached through `config_ref` or a supernode
 * keeps its own references.
 */
function environmentReads(value: unknown, path: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const visit = (v: unknown, at: string): void => {
    if (typeof v === 'string') {
      for (const ref of environmentReferences(v))
        issues.push({ path: at, message: `references ${ref}; write legacy variables as $name` });
    } else if (Array.isArray(v)) v.forEach((item, i) => visit(item, `${at}[${i}]`));
    else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v as Record<string, unknown>)) {
        const keyPath = `${at}.${key}`;
        for (const ref of environmentReferences(key))
          issues.push({ path: keyPath, message: `(the key) references ${ref}` });
        visit(item, keyPath);
      }
    }
  };
  visit(value, path);
  return issues;
}

/**
 * Wraps ad-hoc nodes as listener → nodes (chained by success) → client. Outcome
 * ports the chain leaves open go straight to the client (they must be wired to
 * compile); error ports stay open with `stop`, so a failure shows as `unhandled`.
 */
export function synthesizePolicy(
  nodes: NodeConfig[],
  onError: OnError,
  config: GatewayConfig,
  plugins: SandboxHost['plugins'],
): PolicyConfig {
  const seen = new Set<string>();
  for (const node of nodes) {
    if (node.type === 'listener' || node.type === 'client')
      throw badRequest(`node '${node.id}': '${node.type}' nodes are added automatically`);
    if (node.id === 'listener' || node.id === 'client')
      throw badRequest(`node id '${node.id}' is reserved for the wrapping ${node.id} node`);
    if (seen.has(node.id)) throw badRequest(`duplicate node id '${node.id}'`);
    seen.add(node.id);
  }
  const first = nodes[0] as NodeConfig;
  const edges: EdgeConfig[] = [{ from: 'listener.out', to: `${first.id}.in` }];
  nodes.forEach((node, i) => {
    const next = nodes[i + 1];
    edges.push({ from: `${node.id}.success`, to: next === undefined ? 'client.in' : `${next.id}.in` });
    for (const port of outcomePorts(node, config, plugins))
      edges.push({ from: `${node.id}.${port}`, to: 'client.in' });
    if (onError === 'client') edges.push({ from: `${node.id}.error`, to: 'client.in' });
  });
  return {
    name: SANDBOX_POLICY,
    nodes: [{ id: 'listener', type: 'listener' }, ...nodes, { id: 'client', type: 'client' }],
    edges,
  };
}

/** Mandatory output ports other than `success`: declared outcomes, or a supernode's named outputs. */
function outcomePorts(node: NodeConfig, config: GatewayConfig, plugins: SandboxHost['plugins']): string[] {
  if (node.type === 'supernode') {
    const name = node.config?.['name'];
    const def = config.supernodes.find((s) => s.name === name);
    return (def?.nodes ?? []).filter((n) => n.type === 'output' && n.id !== 'output').map((n) => n.id);
  }
  const def = plugins.get(node.type);
  if (def === undefined) return [];
  return Object.entries(def.outputs)
    .filter(([name, spec]) => name !== 'success' && spec.kind !== 'error')
    .map(([name]) => name);
}

/**
 * Runs a named policy or ad-hoc nodes against a synthetic context through
 * the one compiler and the one run loop, records the trace with source
 * `sandbox`, and stores it beside live traces.
 */
export async function runSandbox(host: SandboxHost, body: Record<string, unknown>): Promise<SandboxResult> {
  const debug = host.debug;
  if (!debug.sandboxEnabled) throw new SandboxError(404, { error: 'not_found' });
  const request = parseSandboxRequest(body);
  let policy: CompiledPolicy | undefined;
  let scratch: Runtime | undefined;
  if (request.mode === 'policy') {
    // The live compiled policy: the sandbox shares its node state, as the docs warn.
    policy = host.runtime.policies.get(request.policy as string);
    if (policy === undefined)
      throw new SandboxError(404, { error: `unknown policy '${request.policy as string}'` });
  } else {
    const current = host.runtime.config;
    const synthetic = synthesizePolicy(request.nodes as NodeConfig[], request.onError, current, host.plugins);
    const shape = validateAgainst(policySchema, synthetic, 'sandbox');
    if (shape.length > 0) throw badRequest(formatIssues(shape), shape);
    try {
      scratch = host.compile({ ...current, routes: [], policies: [synthetic] });
    } catch (err) {
      if (err instanceof ConfigRejected) throw badRequest(formatIssues(err.issues), err.issues);
      throw err;
    }
    policy = scratch.policies.get(SANDBOX_POLICY);
    if (policy === undefined) throw badRequest('the ad-hoc nodes did not compile');
  }
  if (Object.keys(request.mocks).length > 0) policy = withMocks(policy, request.mocks);
  try {
    return await execute(host, request, policy);
  } finally {
    if (scratch !== undefined) void scratch.close();
  }
}

async function execute(
  host: SandboxHost,
  request: SandboxRequest,
  policy: CompiledPolicy,
): Promise<SandboxResult> {
  const debug = host.debug;
  const seconds = debug.config.sandbox_timeout_seconds;
  const controller = new AbortController();
  const ctx = sandboxContext(request.seed, controller.signal);
  ctx.policy = policy.name;
  const recorder = new StepRecorder(ctx, policy, {
    capture: debug.capture,
    maxSteps: debug.config.max_steps,
  });
  const mocked = Object.keys(request.mocks);
  host.logger.warn(
    { mode: request.mode, policy: policy.name, mocked },
    'sandbox run: nodes execute for real',
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), Math.max(1, seconds) * 1000);
  });
  try {
    const run = Promise.resolve(runPolicy(policy, ctx, { logger: host.logger }, recorder));
    const outcome = await Promise.race([run.then(() => 'done' as const), deadline]);
    if (outcome === 'timeout') {
      controller.abort(new Error('sandbox deadline exceeded'));
      run.catch(() => undefined);
      throw new SandboxError(504, {
        error: 'sandbox_timeout',
        message: `run exceeded debug.sandbox_timeout_seconds (${seconds}s)`,
      });
    }
  } finally {
    clearTimeout(timer);
  }
  ctx.response.discardStream();
  const trace = recorder.finish({ seq: debug.store.nextSeq(), source: 'sandbox' });
  debug.store.add(trace);
  return {
    mode: request.mode,
    policy: policy.name,
    warning: SANDBOX_WARNING,
    mocked,
    stored_trace_id: trace.id,
    trace: renderTrace(trace),
  };
}
