import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { Context, type Protocol } from '../core/context.js';
import { NO_ROUTE_BODY } from '../core/errors.js';
import type { CompiledPolicy, TraceRecorder } from '../core/graph-types.js';
import { StepRecorder, type RecorderOptions } from './recorder.js';
import type { TraceStore } from './store.js';
import type { TriggerGate } from './trigger-gate.js';
import { NO_ROUTE_POLICY, type ResponseOrigin } from './trace-types.js';
import { SWITCHYARD_NAMES } from '../config/compat-names.js';

/** Default response header carrying the id of a header-triggered trace (`debug.trace_id_header`). */
export const TRACE_ID_HEADER = SWITCHYARD_NAMES.traceIdHeader;
/** Response header naming `node.port` that produced the response of a header-triggered trace. */
export const RESPONSE_ORIGIN_HEADER = 'x-switchyard-response-origin';

/** A live request being traced: the run loop feeds it steps, the server ends it before answering. */
export interface LiveTrace extends TraceRecorder {
  /** Seals and stores the trace; a header-triggered one also stamps the response headers. */
  end(failure?: unknown): void;
}

/** What the data plane asks of debug mode; present only when `debug.enabled`. */
export interface DebugTap {
  /** A recorder for this request, or undefined when it is not traced (one header lookup). */
  begin(ctx: Context, route: string, policy: CompiledPolicy): LiveTrace | undefined;
  /**
   * Whether this request will be traced: the data plane then buffers its body even on a policy
   * that streams it, so the trace shows what the client sent (its size, its text with
   * `capture_bodies`).
   */
  traces(headers: IncomingMessage['headers'], remoteAddress: string): boolean;
  /** Records an unrouted request; returns headers for the 404 when the caller asked for a trace. */
  unrouted(
    req: IncomingMessage | Http2ServerRequest,
    method: string,
    url: string,
  ): Record<string, string> | undefined;
}

export interface TapOptions extends RecorderOptions {
  triggerHeader: string;
  /** `debug.trace_id_header`, lowercase. */
  traceIdHeader?: string;
  traceAll: boolean;
  /** Whether the trigger header counts for this client (`debug.allowed_cidrs`, `debug.header_secret`). */
  gate: TriggerGate;
}

/** `node.port` for the header; the parenthesized form cannot be a node id with a port. */
export function originText(origin: ResponseOrigin | null): string | undefined {
  return origin === null ? undefined : `${origin.node_id}.${origin.port}`;
}

class LiveRecording extends StepRecorder implements LiveTrace {
  readonly #ctx: Context;
  readonly #store: TraceStore;
  readonly #route: string;
  readonly #triggered: boolean;
  readonly #traceIdHeader: string;

  constructor(
    ctx: Context,
    route: string,
    policy: CompiledPolicy,
    options: RecorderOptions,
    store: TraceStore,
    triggered: boolean,
    traceIdHeader: string,
  ) {
    super(ctx, policy, options);
    this.#traceIdHeader = traceIdHeader;
    this.#ctx = ctx;
    this.#store = store;
    this.#route = route;
    this.#triggered = triggered;
  }

  end(failure?: unknown): void {
    const trace = this.finish({
      seq: this.#store.nextSeq(),
      source: 'request',
      route: this.#route,
      ...(failure === undefined
        ? {}
        : {
            status: 500,
            note: `the policy run failed unexpectedly: ${failure instanceof Error ? failure.message : 'unknown error'}`,
          }),
    });
    this.#store.add(trace);
    if (!this.#triggered) return;
    const headers = this.#ctx.response.headers;
    headers[this.#traceIdHeader] = trace.id;
    const origin = originText(trace.response_origin);
    if (origin !== undefined) headers[RESPONSE_ORIGIN_HEADER] = origin;
  }
}

/** Stands in for a policy when no route matched, so the request still shows in the list. */
const NO_ROUTE: CompiledPolicy = {
  name: NO_ROUTE_POLICY,
  entry: undefined,
  errorHandler: undefined,
  nodes: new Map(),
  buffering: [],
  streaming: [],
};

/**
 * The trigger-header / `trace_all` decision. The trigger header counts when
 * the gate admits the client (its socket address in `debug.allowed_cidrs`,
 * and its value equal to `debug.header_secret` when one is set); otherwise
 * the request is treated as untriggered. The header is left on the request
 * for the upstream.
 * Under `trace_all` untriggered requests are traced silently: no header tells
 * the client that debug mode exists.
 */
export function createDebugTap(store: TraceStore, options: TapOptions): DebugTap {
  const { triggerHeader, traceAll, gate } = options;
  const traceIdHeader = options.traceIdHeader ?? TRACE_ID_HEADER;
  return {
    begin(ctx, route, policy) {
      const triggered = gate(ctx.request.headers[triggerHeader], ctx.request.remoteAddress);
      if (!triggered && !traceAll) return undefined;
      return new LiveRecording(ctx, route, policy, options, store, triggered, traceIdHeader);
    },
    traces(headers, remoteAddress) {
      return traceAll || gate(headers[triggerHeader], remoteAddress);
    },
    unrouted(req, method, url) {
      const triggered = gate(req.headers[triggerHeader], req.socket?.remoteAddress ?? '');
      if (!triggered && !traceAll) return undefined;
      const ctx = requestContext(req, method, url);
      ctx.response.json(404, NO_ROUTE_BODY);
      const trace = new StepRecorder(ctx, NO_ROUTE, options).finish({
        seq: store.nextSeq(),
        source: 'request',
        status: 404,
      });
      store.add(trace);
      return triggered ? { [traceIdHeader]: trace.id, [RESPONSE_ORIGIN_HEADER]: NO_ROUTE_POLICY } : undefined;
    },
  };
}

/** Just enough of a context to snapshot a request that never reached a policy. */
function requestContext(req: IncomingMessage | Http2ServerRequest, method: string, url: string): Context {
  const socket = req.socket;
  const h2 = req.httpVersionMajor === 2;
  const authority = req.headers[':authority'];
  const protocol: Protocol = h2 ? 'http2' : 'http1';
  return new Context({
    method,
    url,
    host: req.headers.host ?? (typeof authority === 'string' ? authority : ''),
    scheme: (socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http',
    protocol,
    headers: req.headers,
    remoteAddress: socket?.remoteAddress ?? '',
    remotePort: socket?.remotePort ?? 0,
  });
}
