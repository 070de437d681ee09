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

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const SPAN_KIND_SERVER = 2;
const STATUS_UNSET = 0;
const STATUS_ERROR = 2;

/**
 * A span per request, W3C `traceparent` propagation, OTLP/HTTP JSON export
 * to `<endpoint>/v1/traces`. Place `phase: start` before the upstream and
 * `phase: end` after it.
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
    const resource = { attributes: [attribute('service.name', config.service_name)] };
    return endNode(store, env, {
      encode: otlpSpan,
      ship: async (spans) => {
        const body = {
          resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'switchyard' }, spans }] }],
        };
        await endpoint.send({ headers: ['content-type', 'application/json'], body: JSON.stringify(body) });
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
  const match = TRACEPARENT.exec(ctx.request.header('traceparent')?.trim().toLowerCase() ?? '');
  if (match === null) return null;
  const [, version, traceId, parentId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return null;
  return { traceId, parentId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** `tracestate` is left as the caller sent it: it belongs to the trace, not to this hop. */
function inject(ctx: Context, span: { traceId: string; spanId: string; sampled: boolean }): void {
  ctx.request.headers.traceparent = `00-${span.traceId}-${span.spanId}-${span.sampled ? '01' : '00'}`;
}

/** One span in the OTLP JSON encoding (hex ids, nanosecond strings, enum numbers). */
function otlpSpan(span: FinishedSpan): Record<string, unknown> {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentId === undefined ? {} : { parentSpanId: span.parentId }),
    name: `${span.method} ${span.path}`,
    kind: SPAN_KIND_SERVER,
    startTimeUnixNano: `${epochMicros(span.startedAt)}000`,
    endTimeUnixNano: `${epochMicros(span.endedAt)}000`,
    attributes: [
      attribute('http.request.method', span.method),
      attribute('url.path', span.path),
      attribute('url.scheme', span.scheme),
      attribute('server.address', span.host),
      attribute('client.address', span.clientIp),
      { key: 'http.response.status_code', value: { intValue: String(span.status) } },
      ...(span.route === '' ? [] : [attribute('switchyard.route', span.route)]),
    ],
    status: { code: span.status >= 500 ? STATUS_ERROR : STATUS_UNSET },
  };
}

function attribute(key: string, value: string): { key: string; value: { stringValue: string } } {
  return { key, value: { stringValue: value } };
}
