import type { Context } from '../core/context.js';
import { NodeError, UNHANDLED_ERROR_BODY, unhandledUpstreamBody } from '../core/errors.js';
import {
  recordNodeRun,
  type CompiledNode,
  type CompiledPolicy,
  type EdgeKind,
  type TraceRecorder,
} from '../core/graph-types.js';
import type { Logger } from '../core/logger.js';
import { StoreError } from '../stores/errors.js';

/** Observers of node outcomes (metrics); called for every node run. */
export interface RunHooks {
  logger: Logger;
  nodeError?(policy: string, nodeId: string, code: string): void;
  /** A span per node (src/telemetry/); absent when tracing is off: one undefined check per node. */
  spans?: NodeSpans;
}

/** Told around every node run; `resumed` after an async node settles, before its error is logged. */
export interface NodeSpans {
  started(ctx: Context, policy: CompiledPolicy, node: CompiledNode): void;
  resumed(ctx: Context, node: CompiledNode): void;
  ended(ctx: Context, node: CompiledNode, port: string): void;
}

const now = (): number => performance.now();

/**
 * Walks the compiled graph from the listener's target until a client node, an
 * unwired port or an unhandled error. Synchronous nodes run in a plain loop;
 * a promise is created only when a node returns one. Live, traced and sandbox
 * runs all go through here.
 */
export function runPolicy(
  policy: CompiledPolicy,
  ctx: Context,
  hooks: RunHooks,
  trace?: TraceRecorder,
): void | Promise<void> {
  return walk(policy, policy.entry, ctx, hooks, trace);
}

function walk(
  policy: CompiledPolicy,
  start: CompiledNode | undefined,
  ctx: Context,
  hooks: RunHooks,
  trace: TraceRecorder | undefined,
): void | Promise<void> {
  let node = start;
  const spans = hooks.spans;
  while (node !== undefined) {
    if (node.isClient) {
      trace?.step(node, 'in', 'terminal', 0);
      return;
    }
    const started = now();
    if (spans !== undefined) spans.started(ctx, policy, node);
    let port: string | Promise<string>;
    try {
      port = node.instance.run(ctx);
    } catch (err) {
      port = recordFailure(policy, node, ctx, err, hooks);
    }
    if (typeof port !== 'string') return resume(policy, node, port, ctx, hooks, trace, started);
    if (spans !== undefined) spans.ended(ctx, node, port);
    node = advance(policy, node, port, ctx, trace, started);
  }
}

async function resume(
  policy: CompiledPolicy,
  node: CompiledNode,
  pending: Promise<string>,
  ctx: Context,
  hooks: RunHooks,
  trace: TraceRecorder | undefined,
  started: number,
): Promise<void> {
  let port: string;
  try {
    port = await pending;
    hooks.spans?.resumed(ctx, node);
  } catch (err) {
    hooks.spans?.resumed(ctx, node);
    port = recordFailure(policy, node, ctx, err, hooks);
  }
  hooks.spans?.ended(ctx, node, port);
  const next = advance(policy, node, port, ctx, trace, started);
  await walk(policy, next, ctx, hooks, trace);
}

/** Picks the next node for `port`, applying the error fallback chain of docs/configuration.md#errors-at-run-time. */
function advance(
  policy: CompiledPolicy,
  node: CompiledNode,
  port: string,
  ctx: Context,
  trace: TraceRecorder | undefined,
  started: number,
): CompiledNode | undefined {
  const duration = now() - started;
  // Plain field updates, read by the metrics scrape: no label lookups per request.
  recordNodeRun(node.stats, duration);
  if (port !== 'error') {
    const next = node.next[port];
    trace?.step(node, port, next === undefined ? 'end_of_chain' : 'success', duration);
    return next;
  }
  if (node.onError !== undefined) {
    trace?.step(node, port, 'error', duration);
    return node.onError;
  }
  const handler = policy.errorHandler;
  if (handler !== undefined && handler !== node) {
    trace?.step(node, port, 'catch_all', duration);
    return handler;
  }
  trace?.step(node, port, 'unhandled', duration);
  ctx.response.discardStream();
  ctx.response.headers = {};
  const failure = ctx.errors.at(-1);
  const upstream = failure?.node_id === node.id ? unhandledUpstreamBody(failure.code) : undefined;
  if (upstream === undefined) ctx.response.json(500, UNHANDLED_ERROR_BODY);
  else ctx.response.json(upstream.status, upstream.body);
  return undefined;
}

/** Turns a thrown failure into an error record plus a prepared JSON response; returns `error`. */
function recordFailure(
  policy: CompiledPolicy,
  node: CompiledNode,
  ctx: Context,
  err: unknown,
  hooks: RunHooks,
): 'error' {
  const failure =
    err instanceof NodeError
      ? err
      : new NodeError('PLUGIN_ERROR', err instanceof Error ? err.message : String(err), { cause: err });
  ctx.errors.push({
    node_id: node.id,
    code: failure.code,
    message: failure.message,
    metadata: failure.metadata,
  });
  if (!failure.responsePrepared) {
    ctx.response.discardStream();
    ctx.response.json(failure.status, { error: failure.error, message: failure.message });
  }
  // A store's failure names the store, the server and the cause (ECONNREFUSED 127.0.0.1:6379), F33.
  const store = storeErrorIn(failure);
  // request_id (the request-id node's header) and client tie the line to the access log (docs/logging.md).
  const requestId = ctx.request.header('x-request-id');
  hooks.logger.warn(
    {
      policy: policy.name,
      node: node.id,
      type: node.type,
      code: failure.code,
      route: ctx.route,
      client: ctx.request.remoteAddress,
      ...(requestId === undefined ? {} : { request_id: requestId }),
      ...(store === undefined ? {} : { store: store.store, cause: store.message }),
    },
    store === undefined
      ? `node failed: ${failure.message}`
      : `node failed: ${failure.message}: ${store.message}`,
  );
  hooks.nodeError?.(policy.name, node.id, failure.code);
  return 'error';
}

/** The StoreError a failure was caused by, a few causes deep; its message holds no secret. */
function storeErrorIn(err: unknown): StoreError | undefined {
  let at: unknown = err;
  for (let depth = 0; depth < 5 && at instanceof Error; depth++) {
    if (at instanceof StoreError) return at;
    at = at.cause;
  }
  return undefined;
}

export type { EdgeKind };
