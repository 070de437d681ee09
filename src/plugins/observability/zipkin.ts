import { isIPv4 } from 'node:net';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { loggerSchema } from './shared/logger-node.js';
import { HttpEndpoint, parseHttpUrl } from './shared/transport.js';
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
  type Span,
} from './shared/tracing.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface ZipkinConfig {
  phase: 'start' | 'end';
  endpoint: string;
  service_name: string;
  server_addr?: string;
  sample_ratio: number;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

const HEX_ID = /^(?:[0-9a-f]{16}|[0-9a-f]{32})$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/**
 * A SERVER span per request, B3 propagation (single `b3` or `X-B3-*`
 * headers in, `X-B3-*` out), Zipkin v2 JSON export to `endpoint`.
 */
export const zipkin = definePlugin({
  type: 'zipkin',
  readsRequestBody: configReadsRequestBody,
  category: 'observability',
  description: 'Trace requests with Zipkin: B3 propagation, v2 JSON span export.',
  schema: loggerSchema(
    {
      phase: phaseProperty,
      endpoint: {
        type: 'string',
        minLength: 1,
        description: 'v2 spans URL, e.g. http://zipkin:9411/api/v2/spans.',
      },
      service_name: { type: 'string', minLength: 1, default: 'featherbit' },
      server_addr: { type: 'string', description: 'IPv4 address reported as localEndpoint.ipv4.' },
      sample_ratio: { type: 'number', minimum: 0, maximum: 1, default: 1 },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per export.' },
    },
    ['phase', 'endpoint'],
  ),
  outputs: tracerOutputs,
  readsResponseBody: () => false,
  create(config: ZipkinConfig, env) {
    if (config.server_addr !== undefined && !isIPv4(config.server_addr)) {
      throw new ConfigError('server_addr', 'must be an IPv4 address');
    }
    const store = openSpans.zipkin;
    if (config.phase === 'start') {
      parseHttpUrl(config.endpoint, 'endpoint');
      return startNode({ store, extract, inject, sample: ratioSampler(config.sample_ratio) });
    }
    const endpoint = new HttpEndpoint(config.endpoint, 'endpoint', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout * 1000,
    });
    const local = {
      serviceName: config.service_name,
      ...(config.server_addr === undefined ? {} : { ipv4: config.server_addr }),
    };
    return endNode(store, env, {
      encode: (span) => zipkinSpan(span, local),
      ship: async (spans) => {
        await endpoint.send({ headers: ['content-type', 'application/json'], body: JSON.stringify(spans) });
      },
      release: () => endpoint.release(),
    });
  },
});

/** Reads `b3: {trace}-{span}[-{sampled}[-{parent}]]`, else the `X-B3-*` headers. */
function extract(ctx: Context): Incoming | null {
  const req = ctx.request;
  const single = req.header('b3')?.trim().toLowerCase();
  let traceId: string | undefined;
  let parentId: string | undefined;
  let flag: string | undefined;
  if (single !== undefined && single.includes('-')) {
    [traceId, parentId, flag] = single.split('-');
  } else {
    traceId = req.header('x-b3-traceid')?.trim().toLowerCase();
    parentId = req.header('x-b3-spanid')?.trim().toLowerCase();
    flag = req.header('x-b3-flags') === '1' ? 'd' : (req.header('x-b3-sampled') ?? single);
  }
  if (traceId === undefined || parentId === undefined || !HEX_ID.test(traceId) || !SPAN_ID.test(parentId)) {
    return null;
  }
  return { traceId, parentId, sampled: sampledFlag(flag) };
}

function sampledFlag(flag: string | undefined): boolean | undefined {
  switch (flag?.toLowerCase()) {
    case '1':
    case 'true':
    case 'd':
      return true;
    case '0':
    case 'false':
      return false;
    default:
      return undefined;
  }
}

function inject(ctx: Context, span: Span): void {
  const headers = ctx.request.headers;
  delete headers.b3;
  delete headers['x-b3-flags'];
  headers['x-b3-traceid'] = span.traceId;
  headers['x-b3-spanid'] = span.spanId;
  if (span.parentId === undefined) delete headers['x-b3-parentspanid'];
  else headers['x-b3-parentspanid'] = span.parentId;
  headers['x-b3-sampled'] = span.sampled ? '1' : '0';
}

/** One span in the Zipkin v2 JSON model (microsecond times, string tags). */
function zipkinSpan(span: FinishedSpan, localEndpoint: Record<string, string>): Record<string, unknown> {
  const start = epochMicros(span.startedAt);
  return {
    traceId: span.traceId,
    id: span.spanId,
    ...(span.parentId === undefined ? {} : { parentId: span.parentId }),
    kind: 'SERVER',
    name: span.method.toLowerCase(),
    timestamp: start,
    duration: Math.max(1, epochMicros(span.endedAt) - start),
    localEndpoint,
    remoteEndpoint: {
      [span.clientIp.includes(':') ? 'ipv6' : 'ipv4']: span.clientIp,
      ...(span.clientPort > 0 ? { port: span.clientPort } : {}),
    },
    tags: {
      'http.method': span.method,
      'http.path': span.path,
      'http.host': span.host,
      'http.status_code': String(span.status),
      ...(span.status >= 500 ? { error: String(span.status) } : {}),
    },
  };
}
