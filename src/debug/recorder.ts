import { randomUUID } from 'node:crypto';
import type { Context } from '../core/context.js';
import type { CompiledNode, CompiledPolicy, EdgeKind, TraceRecorder } from '../core/graph-types.js';
import { captureSnapshot, type CaptureOptions, type ContextSnapshot } from './snapshot.js';
import type { ResponseOrigin, StepOutcome, Trace, TraceSource, TraceStep } from './trace-types.js';

export interface RecorderOptions {
  capture: CaptureOptions;
  maxSteps: number;
}

export interface FinishInfo {
  seq: number;
  source: TraceSource;
  route?: string | undefined;
  /** Overrides the status read from the context (an unexpected failure answered 500). */
  status?: number;
  note?: string;
}

/**
 * Records one policy run: the initial snapshot at construction, then one step
 * per `step` call from the run loop. Only traced requests build one, so
 * untraced requests pay nothing.
 */
export class StepRecorder implements TraceRecorder {
  readonly id = randomUUID();
  readonly #ctx: Context;
  readonly #policy: CompiledPolicy;
  readonly #options: RecorderOptions;
  readonly #startedMs = Date.now();
  readonly #started = performance.now();
  readonly #initial: ContextSnapshot;
  readonly #method: string;
  readonly #path: string;
  readonly #steps: TraceStep[] = [];
  readonly #notes: string[] = [];
  #previous: { request: Buffer | null; response: Buffer | null };
  /** The response as the last step left it, to find the node that produced it. */
  #status: number;
  #body: Buffer | null;
  #stream: unknown;
  #origin: ResponseOrigin | null = null;
  /** An `unhandled` step is completed at finish: the engine writes its 500 after the step call. */
  #pending: Omit<TraceStep, 'after'> | undefined;
  #truncated = false;

  constructor(ctx: Context, policy: CompiledPolicy, options: RecorderOptions) {
    this.#ctx = ctx;
    this.#policy = policy;
    this.#options = options;
    this.#method = ctx.request.method;
    this.#path = ctx.request.path;
    this.#initial = captureSnapshot(ctx, options.capture);
    this.#previous = { request: ctx.request.body, response: ctx.response.body };
    this.#status = ctx.response.status;
    this.#body = ctx.response.body;
    this.#stream = ctx.response.stream;
  }

  get responseOrigin(): ResponseOrigin | null {
    return this.#origin;
  }

  step(node: CompiledNode, port: string, edge: EdgeKind, durationMs: number): void {
    const response = this.#ctx.response;
    if (edge === 'unhandled') {
      this.#origin = { node_id: node.id, port };
    } else if (
      response.status !== this.#status ||
      response.body !== this.#body ||
      response.stream !== this.#stream
    ) {
      this.#origin = { node_id: node.id, port };
    }
    this.#status = response.status;
    this.#body = response.body;
    this.#stream = response.stream;

    if (this.#steps.length >= this.#options.maxSteps) {
      if (!this.#truncated) {
        this.#truncated = true;
        this.#notes.push(`step limit of ${this.#options.maxSteps} reached; later nodes are not recorded`);
      }
      return;
    }
    const record: Omit<TraceStep, 'after'> = {
      index: this.#steps.length,
      node_id: node.id,
      node_type: node.type,
      outcome: this.#outcome(node, port, edge),
      duration_us: Math.round(durationMs * 1000),
      edge,
    };
    if (edge !== 'terminal' && port !== 'success' && port !== 'error') record.port = port;
    const next = nextNode(this.#policy, node, port, edge);
    if (next !== undefined) record.next_node_id = next.id;
    if (edge === 'unhandled') this.#pending = record;
    else this.#steps.push({ ...record, after: this.#capture() });
  }

  /** Seals the recording. Call once, after the run loop returned. */
  finish(info: FinishInfo): Trace {
    if (this.#pending !== undefined) {
      this.#steps.push({ ...this.#pending, after: this.#capture() });
      this.#pending = undefined;
    }
    const notes = [...this.#notes];
    if (info.note !== undefined) notes.push(info.note);
    return {
      id: this.id,
      seq: info.seq,
      source: info.source,
      started_ms: this.#startedMs,
      ...(info.route === undefined || info.route === '' ? {} : { route: info.route }),
      policy: this.#policy.name,
      method: this.#method,
      path: this.#path,
      status: info.status ?? (this.#ctx.response.status === 0 ? 200 : this.#ctx.response.status),
      duration_us: Math.round((performance.now() - this.#started) * 1000),
      captured_bodies: this.#options.capture.captureBodies,
      response_origin: this.#origin,
      notes,
      initial: this.#initial,
      steps: this.#steps,
    };
  }

  #capture(): ContextSnapshot {
    const snapshot = captureSnapshot(this.#ctx, this.#options.capture, this.#previous);
    this.#previous = { request: this.#ctx.request.body, response: this.#ctx.response.body };
    return snapshot;
  }

  #outcome(node: CompiledNode, port: string, edge: EdgeKind): StepOutcome {
    if (port === 'error' && edge !== 'terminal') {
      const last = this.#ctx.errors.at(-1);
      return last !== undefined && last.node_id === node.id
        ? { kind: 'error', code: last.code, message: last.message }
        : { kind: 'error', code: 'UNKNOWN', message: 'the node left through its error port' };
    }
    const spec = (node.definition.outputs as Record<string, { kind?: string } | undefined>)[port];
    return spec?.kind === 'outcome' ? { kind: 'outcome' } : { kind: 'success' };
  }
}

/** The node the run loop goes to next for this step, mirroring `advance` in engine/run.ts. */
function nextNode(
  policy: CompiledPolicy,
  node: CompiledNode,
  port: string,
  edge: EdgeKind,
): CompiledNode | undefined {
  switch (edge) {
    case 'success':
      return node.next[port];
    case 'error':
      return node.onError;
    case 'catch_all':
      return policy.errorHandler;
    default:
      return undefined;
  }
}
