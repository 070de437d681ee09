import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context as OtelContext,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Context, HeaderMap } from '../core/context.js';
import type { CompiledNode, CompiledPolicy } from '../core/graph-types.js';
import type { NodeSpans } from '../engine/run.js';

/** Node types whose run is a call to an upstream: they get a CLIENT span whose id the upstream sees. */
const UPSTREAM_CALLS: ReadonlySet<string> = new Set([
  'upstream',
  'traffic-split',
  'proxy-cache',
  'openfunction',
  'azure-functions',
]);

const propagator = new CompositePropagator({
  propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
});

const getter: TextMapGetter<HeaderMap> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

const setter: TextMapSetter<HeaderMap> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** One request's open spans. */
interface RequestSpans {
  server: Span;
  /** The server span in the caller's context (incoming baggage included): the parent of node spans. */
  parent: OtelContext;
  node: Span | undefined;
  client: Span | undefined;
}

/**
 * The SERVER span of a request (opened at its first node, continuing an incoming
 * `traceparent`), an INTERNAL span per node run and a CLIENT span around each upstream call,
 * whose id goes upstream in `traceparent` (with `baggage` passed on). The request's headers
 * carry the server span's context from its first node on, so a callout forwarding them joins
 * the trace too.
 */
export class RequestTracing implements NodeSpans {
  readonly #tracer: Tracer;
  readonly #open = new WeakMap<Context, RequestSpans>();
  /** The request whose node is running right now (synchronously): log records made meanwhile carry its ids. */
  #current: RequestSpans | undefined;

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  /** The span a log record made at this moment belongs to: the running node's. */
  currentSpan(): Span | undefined {
    const open = this.#current;
    return open === undefined ? undefined : (open.node ?? open.server);
  }

  /** The request's server span, while it is open. */
  serverSpan(ctx: Context): Span | undefined {
    return this.#open.get(ctx)?.server;
  }

  started(ctx: Context, policy: CompiledPolicy, node: CompiledNode): void {
    const open = this.#open.get(ctx) ?? this.#begin(ctx, policy);
    const attributes = {
      'switchyard.policy': policy.name,
      'switchyard.node.id': node.id,
      'switchyard.node.type': node.type,
    };
    open.node = this.#tracer.startSpan(node.id, { kind: SpanKind.INTERNAL, attributes }, open.parent);
    if (UPSTREAM_CALLS.has(node.type)) {
      const within = trace.setSpan(open.parent, open.node);
      open.client = this.#tracer.startSpan(
        `${ctx.request.method} upstream`,
        { kind: SpanKind.CLIENT, attributes: { ...attributes, 'http.request.method': ctx.request.method } },
        within,
      );
      propagator.inject(trace.setSpan(within, open.client), ctx.request.headers, setter);
    }
    this.#current = open;
  }

  resumed(ctx: Context): void {
    this.#current = this.#open.get(ctx);
  }

  ended(ctx: Context, node: CompiledNode, port: string): void {
    const open = this.#open.get(ctx);
    this.#current = undefined;
    if (open?.node === undefined) return;
    const failure = port === 'error' ? ctx.errors.at(-1) : undefined;
    const code = failure?.node_id === node.id ? failure.code : undefined;
    for (const span of open.client === undefined ? [open.node] : [open.client, open.node]) {
      span.setAttribute('switchyard.node.port', port);
      if (code !== undefined) {
        span.setAttribute('switchyard.error.code', code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: code });
      }
    }
    if (open.client !== undefined) {
      if (ctx.response.status > 0) open.client.setAttribute('http.response.status_code', ctx.response.status);
      open.client.end();
      open.client = undefined;
      // Later callouts carry the request's own span again, not this finished call's.
      propagator.inject(open.parent, ctx.request.headers, setter);
    }
    open.node.end();
    open.node = undefined;
  }

  /** Closes the request span once the answer went out (spans a failed walk left open too). */
  finished(ctx: Context, status: number): void {
    const open = this.#open.get(ctx);
    if (open === undefined) return;
    this.#open.delete(ctx);
    if (this.#current === open) this.#current = undefined;
    open.client?.end();
    open.node?.end();
    open.server.setAttribute('http.response.status_code', status);
    if (ctx.route !== '') open.server.setAttribute('http.route', ctx.route);
    const code = ctx.errors[0]?.code;
    if (code !== undefined) open.server.setAttribute('switchyard.error.code', code);
    if (status >= 500) open.server.setStatus({ code: SpanStatusCode.ERROR });
    open.server.end();
  }

  #begin(ctx: Context, policy: CompiledPolicy): RequestSpans {
    const req = ctx.request;
    const incoming = propagator.extract(ROOT_CONTEXT, req.headers, getter);
    const server = this.#tracer.startSpan(
      `${req.method} ${ctx.route === '' ? req.path : ctx.route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'url.path': req.path,
          'url.scheme': req.scheme,
          'server.address': req.host,
          'client.address': req.remoteAddress,
          'switchyard.policy': policy.name,
        },
      },
      incoming,
    );
    const parent = trace.setSpan(incoming, server);
    propagator.inject(parent, req.headers, setter);
    const open: RequestSpans = { server, parent, node: undefined, client: undefined };
    this.#open.set(ctx, open);
    return open;
  }
}
