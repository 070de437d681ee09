/** Trace propagation and sampling of the three tracers (their export formats are in http-loggers.test.ts). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Context } from '../../../src/core/context.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { NodeInstance, PluginDefinition } from '../../../src/core/plugin.js';
import { opentelemetry } from '../../../src/plugins/observability/opentelemetry.js';
import { skywalkingLogger } from '../../../src/plugins/observability/skywalking-logger.js';
import { skywalking } from '../../../src/plugins/observability/skywalking.js';
import { zipkin } from '../../../src/plugins/observability/zipkin.js';
import type { Origin, SeenRequest } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  parse,
  startHttpCollector,
  type LogData,
  type OtlpExport,
  type Segment,
  type ZipkinSpan,
} from './fakes.js';
import { runNow, templatedEnv } from '../../support/node-run.js';

let collector: Origin;
let base: string;
before(async () => {
  collector = await startHttpCollector();
  base = `http://127.0.0.1:${collector.port}`;
});
after(async () => {
  await collector.close();
  await closeAllPools();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const seen = (prefix: string): SeenRequest[] => collector.requests.filter((r) => r.url.startsWith(prefix));
const body = <T>(r: SeenRequest | undefined): T => parse<T>(r?.body ?? 'null');

/** Runs start, then end, over `ctx`; closes the end node so its spans leave now. */
async function trace(start: NodeInstance, end: NodeInstance, ctx: Context): Promise<void> {
  assert.equal(runNow(start, ctx), 'success');
  ctx.response.status = 200;
  assert.equal(runNow(end, ctx), 'success');
  await end.close?.();
}

function pair(definition: PluginDefinition<never, 'success'>, config: Record<string, unknown>) {
  const start = instantiate(definition, { ...config, phase: 'start' }, templatedEnv());
  const end = instantiate(definition, { ...config, phase: 'end' }, templatedEnv());
  return { start, end };
}

test('opentelemetry: continues an incoming traceparent and forwards this span as the parent', async () => {
  const { start, end } = pair(opentelemetry, { endpoint: `${base}/otel-continue` });
  const incoming = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const ctx = requestContext({ headers: { host: 'gw', traceparent: incoming, tracestate: 'a=b' } });
  await trace(start, end, ctx);
  const [span] = body<OtlpExport>(seen('/otel-continue/')[0]).resourceSpans[0]!.scopeSpans[0]!.spans;
  assert.equal(span!.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(span!.parentSpanId, '00f067aa0ba902b7');
  assert.equal(ctx.request.headers.traceparent, `00-4bf92f3577b34da6a3ce929d0e0e4736-${span!.spanId}-01`);
  assert.equal(ctx.request.headers.tracestate, 'a=b');
});

test('opentelemetry: an unsampled parent is honoured; always_off and a zero ratio export nothing', async () => {
  const unsampled = pair(opentelemetry, { endpoint: `${base}/otel-off` });
  const ctx = requestContext({
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00' },
  });
  await trace(unsampled.start, unsampled.end, ctx);
  assert.match(String(ctx.request.headers.traceparent), /-00$/);
  const off = pair(opentelemetry, {
    endpoint: `${base}/otel-off`,
    sampler: { name: 'always_off' },
  });
  await trace(off.start, off.end, requestContext());
  const zero = pair(opentelemetry, {
    endpoint: `${base}/otel-off`,
    sampler: { name: 'trace_id_ratio', options: { fraction: 0 } },
  });
  await trace(zero.start, zero.end, requestContext());
  assert.equal(seen('/otel-off/').length, 0);
});

test('opentelemetry: a malformed traceparent starts a new trace; an end node without a start is a no-op', async () => {
  const { start, end } = pair(opentelemetry, { endpoint: `${base}/otel-new` });
  const ctx = requestContext({
    headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
  });
  await trace(start, end, ctx);
  const [span] = body<OtlpExport>(seen('/otel-new/')[0]).resourceSpans[0]!.scopeSpans[0]!.spans;
  assert.notEqual(span!.traceId, '00000000000000000000000000000000');
  assert.equal(span!.parentSpanId, undefined);
  const lonely = instantiate(
    opentelemetry,
    { phase: 'end', endpoint: `${base}/otel-lonely` },
    templatedEnv(),
  );
  assert.equal(runNow(lonely, requestContext()), 'success');
  await lonely.close?.();
  assert.equal(seen('/otel-lonely/').length, 0);
});

test('zipkin: continues X-B3-* headers and forwards X-B3-* with this span', async () => {
  const { start, end } = pair(zipkin, { endpoint: `${base}/zipkin-multi/api/v2/spans` });
  const ctx = requestContext({
    headers: { 'x-b3-traceid': '463ac35c9f6413ad', 'x-b3-spanid': 'a2fb4a1d1a96d312', 'x-b3-sampled': '1' },
  });
  await trace(start, end, ctx);
  const [span] = body<ZipkinSpan[]>(seen('/zipkin-multi/')[0]);
  assert.equal(span!.traceId, '463ac35c9f6413ad', '64-bit trace ids are kept');
  assert.equal(span!.parentId, 'a2fb4a1d1a96d312');
  const h = ctx.request.headers;
  assert.equal(h['x-b3-traceid'], '463ac35c9f6413ad');
  assert.equal(h['x-b3-spanid'], span!.id);
  assert.equal(h['x-b3-parentspanid'], 'a2fb4a1d1a96d312');
  assert.equal(h['x-b3-sampled'], '1');
});

test('zipkin: reads the single b3 header, honours "not sampled", and samples new traces by ratio', async () => {
  const { start, end } = pair(zipkin, { endpoint: `${base}/zipkin-single/api/v2/spans` });
  const ctx = requestContext({ headers: { b3: '80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0' } });
  await trace(start, end, ctx);
  assert.equal(ctx.request.headers.b3, undefined, 'replaced by X-B3-* headers');
  assert.equal(ctx.request.headers['x-b3-traceid'], '80f198ee56343ba864fe8b2a57d3eff7');
  assert.equal(ctx.request.headers['x-b3-sampled'], '0');
  const never = pair(zipkin, { endpoint: `${base}/zipkin-single/api/v2/spans`, sample_ratio: 0 });
  await trace(never.start, never.end, requestContext());
  assert.equal(seen('/zipkin-single/').length, 0);
});

test('skywalking: continues sw8, reports the parent segment as a reference, forwards sw8', async () => {
  const { start, end } = pair(skywalking, {
    endpoint_addr: `${base}/sw-continue`,
    service_name: 'gw',
    service_instance_name: 'gw-1',
  });
  const sw8 = [
    '1',
    b64('trace-1'),
    b64('segment-9'),
    '3',
    b64('shop'),
    b64('shop-1'),
    b64('/buy'),
    b64('gw:80'),
  ].join('-');
  const ctx = requestContext({ url: '/orders', headers: { host: 'api.test', sw8 } });
  await trace(start, end, ctx);
  const [segment] = body<Segment[]>(seen('/sw-continue/')[0]);
  assert.equal(segment!.traceId, 'trace-1');
  assert.deepEqual(segment!.spans[0]!.refs, [
    {
      refType: 'CrossProcess',
      traceId: 'trace-1',
      parentTraceSegmentId: 'segment-9',
      parentSpanId: 3,
      parentService: 'shop',
      parentServiceInstance: 'shop-1',
      parentEndpoint: '/buy',
      networkAddressUsedAtPeer: 'gw:80',
    },
  ]);
  const out = String(ctx.request.headers.sw8).split('-');
  assert.equal(out.length, 8);
  const decode = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
  assert.equal(out[0], '1');
  assert.equal(decode(out[1]), 'trace-1');
  assert.equal(decode(out[2]), segment!.traceSegmentId);
  assert.equal(out[3], '0');
  assert.equal(decode(out[4]), 'gw');
  assert.equal(decode(out[6]), '/orders');
});

test('skywalking-logger: an entry made inside a skywalking span carries its trace context', async () => {
  const { start, end } = pair(skywalking, { endpoint_addr: `${base}/sw-linked` });
  const logger = instantiate(skywalkingLogger, { endpoint_addr: `${base}/sw-linked-logs` }, templatedEnv());
  const ctx = requestContext();
  runNow(start, ctx);
  runNow(logger, ctx);
  runNow(end, ctx);
  await end.close?.();
  await logger.close?.();
  const [segment] = body<Segment[]>(seen('/sw-linked/')[0]);
  const [log] = body<LogData[]>(seen('/sw-linked-logs/')[0]);
  assert.deepEqual(log!.traceContext, {
    traceId: segment!.traceId,
    traceSegmentId: segment!.traceSegmentId,
    spanId: 0,
  });
});
