import { hostname } from 'node:os';
import type { Context } from '../../core/context.js';
import { definePlugin } from '../../core/plugin.js';
import { loggerSchema } from './shared/logger-node.js';
import { HttpEndpoint, joinUrl } from './shared/transport.js';
import {
  endNode,
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

interface SkywalkingConfig {
  phase: 'start' | 'end';
  endpoint_addr: string;
  service_name: string;
  service_instance_name: string;
  sample_ratio: number;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

/** The caller's segment, from its `sw8` header: the reference our segment points back to. */
interface ParentRef {
  parentSpanId: number;
  parentService: string;
  parentServiceInstance: string;
  parentEndpoint: string;
  networkAddressUsedAtPeer: string;
}

/** SkyWalking's component id for an unknown library; no id is registered for this gateway. */
const COMPONENT_ID = 0;

/**
 * One Entry span per request in its own segment, `sw8` propagation, export
 * of segment objects (JSON) to `<endpoint_addr>/v3/segments`.
 */
export const skywalking = definePlugin({
  type: 'skywalking',
  readsRequestBody: configReadsRequestBody,
  category: 'observability',
  description: 'Trace requests with Apache SkyWalking: sw8 propagation, segment export over HTTP.',
  schema: loggerSchema(
    {
      phase: phaseProperty,
      endpoint_addr: {
        type: 'string',
        minLength: 1,
        default: 'http://127.0.0.1:12800',
        description: 'OAP base URL.',
      },
      service_name: { type: 'string', minLength: 1, default: 'featherbit' },
      service_instance_name: {
        type: 'string',
        minLength: 1,
        default: 'featherbit Instance Name',
        description: '`$hostname` is replaced by the host name.',
      },
      sample_ratio: { type: 'number', minimum: 0, maximum: 1, default: 1 },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per export.' },
    },
    ['phase'],
  ),
  outputs: tracerOutputs,
  readsResponseBody: () => false,
  create(config: SkywalkingConfig, env) {
    const service = config.service_name;
    const instance = instanceName(config.service_instance_name);
    const store = openSpans.skywalking;
    if (config.phase === 'start') {
      return startNode({
        store,
        extract,
        inject: (ctx, span) => inject(ctx, span, service, instance),
        sample: ratioSampler(config.sample_ratio),
        ids: { trace: 16, span: 16 },
      });
    }
    const endpoint = new HttpEndpoint(joinUrl(config.endpoint_addr, 'v3/segments'), 'endpoint_addr', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout * 1000,
    });
    return endNode(store, env, {
      encode: (span) => segment(span, service, instance),
      ship: async (segments) => {
        await endpoint.send({
          headers: ['content-type', 'application/json'],
          body: JSON.stringify(segments),
        });
      },
      release: () => endpoint.release(),
    });
  },
});

export function instanceName(configured: string): string {
  return configured === '$hostname' ? hostname() : configured;
}

/** `sw8: sample-trace-segment-span-service-instance-endpoint-address`, strings base64-encoded. */
function extract(ctx: Context): Incoming | null {
  const fields = ctx.request.header('sw8')?.trim().split('-');
  if (fields?.length !== 8) return null;
  const [sample, trace, segmentId, spanId, ...rest] = fields as [string, string, string, string, ...string[]];
  const parentSpanId = Number(spanId);
  const [traceId, parentId, parentService, parentServiceInstance, parentEndpoint, address] = [
    trace,
    segmentId,
    ...rest,
  ].map(unb64);
  if (!traceId || !parentId || !Number.isInteger(parentSpanId) || (sample !== '0' && sample !== '1'))
    return null;
  const ref: ParentRef = {
    parentSpanId,
    parentService: parentService ?? '',
    parentServiceInstance: parentServiceInstance ?? '',
    parentEndpoint: parentEndpoint ?? '',
    networkAddressUsedAtPeer: address ?? '',
  };
  return { traceId, parentId, sampled: sample === '1', extra: ref };
}

function inject(ctx: Context, span: Span, service: string, instance: string): void {
  const req = ctx.request;
  ctx.request.headers.sw8 = [
    span.sampled ? '1' : '0',
    b64(span.traceId),
    b64(span.spanId),
    '0',
    b64(service),
    b64(instance),
    b64(req.path),
    b64(req.host),
  ].join('-');
}

/** A SegmentObject with its single Entry span, as the OAP's HTTP receiver takes it. */
function segment(span: FinishedSpan, service: string, instance: string): Record<string, unknown> {
  const ref = span.incoming?.extra as ParentRef | undefined;
  const startTime = Math.round(performance.timeOrigin + span.startedAt);
  return {
    traceId: span.traceId,
    traceSegmentId: span.spanId,
    service,
    serviceInstance: instance,
    spans: [
      {
        operationName: span.path,
        startTime,
        endTime: Math.max(startTime, Math.round(performance.timeOrigin + span.endedAt)),
        spanType: 'Entry',
        spanId: 0,
        parentSpanId: -1,
        isError: span.status >= 500,
        spanLayer: 'Http',
        componentId: COMPONENT_ID,
        peer: span.clientPort > 0 ? `${span.clientIp}:${span.clientPort}` : span.clientIp,
        tags: [
          { key: 'http.method', value: span.method },
          { key: 'url', value: `${span.scheme}://${span.host}${span.path}` },
          { key: 'http.status_code', value: String(span.status) },
        ],
        ...(ref === undefined || span.parentId === undefined
          ? {}
          : {
              refs: [
                {
                  refType: 'CrossProcess',
                  traceId: span.traceId,
                  parentTraceSegmentId: span.parentId,
                  ...ref,
                },
              ],
            }),
      },
    ],
  };
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function unb64(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return Buffer.from(text, 'base64').toString('utf8');
}
