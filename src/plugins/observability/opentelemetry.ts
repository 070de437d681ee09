import { isValidSpanId, isValidTraceId, SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { loggerSchema } from './shared/logger-node.js';
import { HttpEndpoint, joinUrl } from './shared/transport.js';
import {
  endNode,
  epochMicros,
  openSpans,
  phaseProperty,
  ratioSampler,
  startNode,
  tracerOutputs,
  type FinishedSpan,
  type Incoming,
} from './shared/tracing.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface OpenTelemetryConfig {
  phase: 'start' | 'end';
  endpoint?: string;
  collector?: string;
  service_name: string;
  sampler: { name: 'always_on' | 'always_off' | 'trace_id_ratio'; options: { fraction: number } };
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

const SCOPE = { name: 'switchyard' } as const;

/**
 * A span per request, W3C `traceparent` propagation, OTLP/HTTP JSON export
 * to `<endpoint>/v1/traces`. Place `phase: start` before the upstream and
 * `phase: end` after it. The `traceparent` parsing and the OTLP JSON encoding
 * are the OpenTelemetry SDK's; the batching, TLS and transport are the other
 * loggers' (docs/opentelemetry.md#the-tracer-node-types).
 */
export const opentelemetry = definePlugin({
  type: 'opentelemetry',
  readsRequestBody: configReadsRequestBody,
  category: 'observability',
  description: 'Trace requests with OpenTelemetry: W3C traceparent propagation, OTLP/HTTP JSON export.',
  schema: loggerSchema(
    {
      phase: phaseProperty,
      endpoint: { type: 'string', minLength: 1, description: 'Collector base URL; spans go to /v1/traces.' },
      collector: { type: 'string', minLength: 1, description: 'Alias of `endpoint`.' },
      service_name: { type: 'string', minLength: 1, default: 'featherbit' },
      sampler: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          name: { type: 'string', enum: ['always_on', 'always_off', 'trace_id_ratio'], default: 'always_on' },
          options: {
            type: 'object',
            additionalProperties: false,
            default: {},
            properties: { fraction: { type: 'number', minimum: 0, maximum: 1, default: 1 } },
          },
        },
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per export.' },
    },
    ['phase'],
  ),
  outputs: tracerOutputs,
  readsResponseBody: () => false,
  create(config: OpenTelemetryConfig, env) {
    const store = openSpans.opentelemetry;
    const base = config.endpoint ?? config.collector ?? 'http://localhost:4318';
    const key = config.endpoint !== undefined ? 'endpoint' : 'collector';
    if (config.endpoint !== undefined && config.collector !== undefined) {
      throw new ConfigError('collector', 'set endpoint or its alias collector, not both');
    }
    if (config.phase === 'start') {
      return startNode({ store, extract, inject, sample: sampler(config) });
    }
    const endpoint = new HttpEndpoint(joinUrl(base, 'v1/traces'), key, {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout * 1000,
    });
    const resource = resourceFromAttributes({ 'service.name': config.service_name });
    return endNode(store, env, {
      encode: (span) => readableSpan(span, resource),
      ship: async (spans) => {
        const body = Buffer.from(JsonTraceSerializer.serializeRequest(spans) ?? []);
        await endpoint.send({ headers: ['content-type', 'application/json'], body });
      },
      release: () => endpoint.release(),
    });
  },
});

function sampler(config: OpenTelemetryConfig): (traceId: string) => boolean {
  switch (config.sampler.name) {
    case 'always_on':
      return () => true;
    case 'always_off':
      return () => false;
    default:
      return ratioSampler(config.sampler.options.fraction);
  }
}

function extract(ctx: Context): Incoming | null {
  const parent = parseTraceParent(ctx.request.header('traceparent')?.trim().toLowerCase() ?? '');
  if (parent === null || !isValidTraceId(parent.traceId) || !isValidSpanId(parent.spanId)) return null;
  return {
    traceId: parent.traceId,
    parentId: parent.spanId,
    sampled: (parent.traceFlags & 1) === 1,
  };
}

/** `tracestate` is left as the caller sent it: it belongs to the trace, not to this hop. */
function inject(ctx: Context, span: { traceId: string; spanId: string; sampled: boolean }): void {
  ctx.request.headers.traceparent = `00-${span.traceId}-${span.spanId}-${span.sampled ? '01' : '00'}`;
}

/** A finished span as the SDK's exporters read it (its OTLP JSON encoding is the SDK's). */
function readableSpan(span: FinishedSpan, resource: ReadableSpan['resource']): ReadableSpan {
  const flags = span.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE;
  const context = { traceId: span.traceId, spanId: span.spanId, traceFlags: flags };
  const startTime = hrTime(span.startedAt);
  const endTime = hrTime(span.endedAt);
  return {
    name: `${span.method} ${span.path}`,
    kind: SpanKind.SERVER,
    spanContext: () => context,
    ...(span.parentId === undefined
      ? {}
      : {
          parentSpanContext: {
            traceId: span.traceId,
            spanId: span.parentId,
            traceFlags: flags,
            isRemote: true,
          },
        }),
    startTime,
    endTime,
    duration: [
      endTime[0] - startTime[0] - (endTime[1] < startTime[1] ? 1 : 0),
      (endTime[1] - startTime[1] + 1e9) % 1e9,
    ],
    status: { code: span.status >= 500 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: {
      'http.request.method': span.method,
      'url.path': span.path,
      'url.scheme': span.scheme,
      'server.address': span.host,
      'client.address': span.clientIp,
      'http.response.status_code': span.status,
      ...(span.route === '' ? {} : { 'switchyard.route': span.route }),
    },
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** `[seconds, nanoseconds]` since the epoch of a `performance.now()` reading, whole microseconds. */
function hrTime(at: number): [number, number] {
  const micros = epochMicros(at);
  return [Math.floor(micros / 1e6), (micros % 1e6) * 1000];
}
