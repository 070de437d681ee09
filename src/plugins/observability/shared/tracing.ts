import { randomBytes } from 'node:crypto';
import type { Context } from '../../../core/context.js';
import type { NodeInstance, PluginEnv } from '../../../core/plugin.js';
import { BatchSender, type BatchSettings, type Ship } from './batch.js';

/** The trace a request continues, as read from its propagation headers. */
export interface Incoming {
  traceId: string;
  /** The caller's span (for SkyWalking, its segment), our parent. */
  parentId: string;
  /** `undefined` leaves the decision to the sampler. */
  sampled: boolean | undefined;
  /** Format-specific details (SkyWalking's parent segment reference). */
  extra?: unknown;
}

/** The span a start node opens and its end node closes. */
export interface Span {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId: string | undefined;
  readonly sampled: boolean;
  /** `performance.now()` scale. */
  readonly startedAt: number;
  readonly incoming: Incoming | null;
}

/** A closed span with the request facts exporters report. */
export interface FinishedSpan extends Span {
  readonly endedAt: number;
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly scheme: string;
  readonly status: number;
  readonly route: string;
  readonly clientIp: string;
  readonly clientPort: number;
}

/** Open spans by request, one store per tracer type; nothing outlives its context. */
export type SpanStore = WeakMap<Context, Span>;

export const openSpans = {
  opentelemetry: new WeakMap<Context, Span>(),
  zipkin: new WeakMap<Context, Span>(),
  skywalking: new WeakMap<Context, Span>(),
} as const satisfies Record<string, SpanStore>;

export interface TracerSpec {
  store: SpanStore;
  /** Reads the caller's trace from the request headers; null starts a new trace. */
  extract(ctx: Context): Incoming | null;
  /** Writes the propagation headers the upstream receives. */
  inject(ctx: Context, span: Span): void;
  /** Decides for a new trace. */
  sample(traceId: string): boolean;
  /** Id lengths in bytes of a new trace and of a span. */
  ids?: { trace: number; span: number };
}

export interface Exporter<T> {
  encode(span: FinishedSpan): T;
  ship: Ship<T>;
  release?(): void;
}

/** Spans leave in batches: few requests to the collector, none on the request path. */
const EXPORT_BATCH: BatchSettings = {
  maxSize: 256,
  inactiveMs: 1000,
  bufferDurationMs: 5000,
  maxRetries: 0,
  retryDelayMs: 0,
  maxPending: 4096,
};

/** A `phase: start` node: open (or continue) the trace, remember the span, propagate it. */
export function startNode(spec: TracerSpec): NodeInstance<'success'> {
  const ids = spec.ids ?? { trace: 16, span: 8 };
  return {
    run(ctx) {
      const incoming = spec.extract(ctx);
      const traceId = incoming?.traceId ?? randomHex(ids.trace);
      const span: Span = {
        traceId,
        spanId: randomHex(ids.span),
        parentId: incoming?.parentId,
        sampled: incoming?.sampled ?? spec.sample(traceId),
        startedAt: performance.now(),
        incoming,
      };
      spec.store.set(ctx, span);
      spec.inject(ctx, span);
      return 'success';
    },
  };
}

/** A `phase: end` node: close the request's span and queue it for export when sampled. */
export function endNode<T>(store: SpanStore, env: PluginEnv, exporter: Exporter<T>): NodeInstance<'success'> {
  const sender = new BatchSender<T>(EXPORT_BATCH, exporter.ship, (kind, count, error) => {
    env.logger.warn(
      { policy: env.policy, node: env.nodeId, [kind]: count, ...(error ? { err: error.message } : {}) },
      kind === 'dropped' ? 'span buffer full: dropped the oldest spans' : 'span export failed: spans dropped',
    );
  });
  return {
    run(ctx) {
      const span = store.get(ctx);
      // The span stays readable (skywalking-logger links entries to it) until the context goes.
      if (span === undefined) return 'success';
      if (span.sampled) sender.push(exporter.encode(finish(span, ctx)));
      return 'success';
    },
    async close() {
      await sender.close();
      exporter.release?.();
    },
  };
}

function finish(span: Span, ctx: Context): FinishedSpan {
  const req = ctx.request;
  return {
    ...span,
    endedAt: performance.now(),
    method: req.method,
    path: req.path,
    host: req.host,
    scheme: req.scheme,
    status: ctx.response.status,
    route: ctx.route,
    clientIp: req.remoteAddress,
    clientPort: req.remotePort,
  };
}

/** Wall-clock microseconds since the epoch of a `performance.now()` reading. */
export function epochMicros(at: number): number {
  return Math.round((performance.timeOrigin + at) * 1000);
}

/**
 * A ratio sampler that decides the same way for the same trace id, on every
 * gateway instance: the id's low 52 bits as a fraction of 2^52.
 */
export function ratioSampler(ratio: number): (traceId: string) => boolean {
  if (ratio >= 1) return () => true;
  if (ratio <= 0) return () => false;
  return (traceId) => parseInt(traceId.slice(-13), 16) / 2 ** 52 < ratio;
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export const phaseProperty = {
  type: 'string',
  enum: ['start', 'end'],
  description: '`start` before the upstream (opens the span), `end` after it (closes and exports it).',
} as const;

export const tracerOutputs = {
  success: { kind: 'success', description: 'Always, at once: spans are exported in the background.' },
} as const;
