/**
 * Every HTTP-based logger and exporter against one local collector: each row
 * runs two requests through the node, closes it (which ships what waits) and
 * checks the request the service would receive, in its real wire format.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac, generateKeyPairSync, verify } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Context } from '../../../src/core/context.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { NodeInstance, PluginDefinition } from '../../../src/core/plugin.js';
import { clickhouseLogger } from '../../../src/plugins/observability/clickhouse-logger.js';
import { elasticsearchLogger } from '../../../src/plugins/observability/elasticsearch-logger.js';
import { googleCloudLogging } from '../../../src/plugins/observability/google-cloud-logging.js';
import { httpLogger } from '../../../src/plugins/observability/http-logger.js';
import { lago } from '../../../src/plugins/observability/lago.js';
import { loggly } from '../../../src/plugins/observability/loggly.js';
import { lokiLogger } from '../../../src/plugins/observability/loki-logger.js';
import { opentelemetry } from '../../../src/plugins/observability/opentelemetry.js';
import { skywalkingLogger } from '../../../src/plugins/observability/skywalking-logger.js';
import { skywalking } from '../../../src/plugins/observability/skywalking.js';
import { slsLogger } from '../../../src/plugins/observability/sls-logger.js';
import { splunkHecLogging } from '../../../src/plugins/observability/splunk-hec-logging.js';
import { tencentCloudCls } from '../../../src/plugins/observability/tencent-cloud-cls.js';
import { zipkin } from '../../../src/plugins/observability/zipkin.js';
import type { Origin, SeenRequest } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import {
  decodeProto,
  int,
  keyValues,
  messages,
  parse,
  startHttpCollector,
  text,
  type Entry,
  type LogData,
  type OtlpExport,
  type OtlpSpan,
  type Segment,
  type ZipkinSpan,
} from './fakes.js';
import { runNow, templatedEnv } from '../../support/node-run.js';

type AnyDefinition = PluginDefinition<never, string>;

interface GclEntry {
  logName: string;
  resource: unknown;
  timestamp: string;
  httpRequest: { requestMethod: string; status: number };
  jsonPayload: Entry;
}

interface Row {
  definition: AnyDefinition;
  /** Every request of the row goes under this path (token requests included). */
  prefix: string;
  config(base: string, port: number): Record<string, unknown>;
  /** Tracers run a `phase: start` and a `phase: end` node. */
  tracer?: boolean;
  check(requests: SeenRequest[], port: number): void;
}

let collector: Origin;
before(async () => {
  collector = await startHttpCollector();
});
after(async () => {
  await collector.close();
  await closeAllPools();
});

const KEY = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = KEY.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** Two requests with what every entry should show: method, path, status, consumer, route. */
function contexts(): Context[] {
  const first = requestContext({
    method: 'POST',
    url: '/orders?id=7',
    host: 'api.test',
    headers: { host: 'api.test', 'user-agent': 'ua/1', 'x-sub': 'sub-1' },
    body: Buffer.from('{"a":1}'),
  });
  first.route = 'orders';
  first.setConsumer({ name: 'alice' });
  first.response.status = 201;
  first.response.setBody('created', 'text/plain');
  const second = requestContext({
    url: '/health',
    host: 'api.test',
    headers: { host: 'api.test', 'x-sub': 'sub-2' },
  });
  second.route = 'health';
  second.response.status = 503;
  return [first, second];
}

const json = <T>(r: SeenRequest): T => parse<T>(r.body);
const lines = (r: SeenRequest): string[] => r.body.toString('utf8').split('\n').filter(Boolean);

/** The two default entries, whichever logger carried them. */
function assertDefaultEntries(entries: Entry[]): void {
  assert.equal(entries.length, 2);
  const [a, b] = entries as [Entry, Entry];
  assert.equal(a.request.method, 'POST');
  assert.equal(a.request.uri, '/orders?id=7');
  assert.equal(a.request.headers['user-agent'], 'ua/1');
  assert.equal(a.response.status, 201);
  assert.equal(a.response.size, 7);
  assert.equal(a.route, 'orders');
  assert.equal(a.consumer, 'alice');
  assert.equal(a.client_ip, '192.0.2.10');
  assert.equal(typeof a.latency, 'number');
  assert.equal(b.request.uri, '/health');
  assert.equal(b.response.status, 503);
}

const rows: Row[] = [
  {
    definition: httpLogger,
    prefix: '/http-json/',
    config: (base) => ({
      uri: `${base}/http-json/logs`,
      headers: { 'x-token': 'secret' },
      auth_header: 'Bearer abc',
    }),
    check([req]) {
      assert.equal(req?.method, 'POST');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['x-token'], 'secret');
      assert.equal(req.headers.authorization, 'Bearer abc');
      assertDefaultEntries(json<Entry[]>(req));
    },
  },
  {
    definition: httpLogger,
    prefix: '/http-lines/',
    config: (base) => ({ uri: `${base}/http-lines/logs?src=gw`, concat_method: 'new_line', method: 'put' }),
    check([req]) {
      assert.equal(req?.method, 'PUT');
      assert.equal(req.url, '/http-lines/logs?src=gw');
      assert.equal(req.headers['content-type'], 'text/plain');
      assertDefaultEntries(lines(req).map((l) => parse<Entry>(l)));
    },
  },
  {
    definition: elasticsearchLogger,
    prefix: '/es/',
    config: (base) => ({
      endpoint_addrs: [`${base}/es`],
      field: { index: 'gateway' },
      auth: { username: 'elastic', password: 'pw' },
    }),
    check([req]) {
      assert.equal(req?.url, '/es/_bulk');
      assert.equal(req.headers['content-type'], 'application/x-ndjson');
      assert.equal(req.headers.authorization, `Basic ${Buffer.from('elastic:pw').toString('base64')}`);
      const body = req.body.toString('utf8');
      assert.ok(body.endsWith('\n'), 'the bulk body ends with a newline');
      const parts = lines(req).map((l) => parse<unknown>(l));
      assert.deepEqual(parts[0], { index: { _index: 'gateway' } });
      assert.deepEqual(parts[2], { index: { _index: 'gateway' } });
      assertDefaultEntries([parts[1], parts[3]] as Entry[]);
    },
  },
  {
    definition: clickhouseLogger,
    prefix: '/ch/',
    config: (base) => ({
      endpoint_addr: `${base}/ch/`,
      database: 'logs',
      logtable: 'access',
      user: 'gw',
      password: 'pw',
    }),
    check([req]) {
      assert.equal(req?.headers['x-clickhouse-user'], 'gw');
      assert.equal(req.headers['x-clickhouse-key'], 'pw');
      assert.equal(req.headers['x-clickhouse-database'], 'logs');
      const [statement, ...rowsText] = req.body.toString('utf8').split('\n');
      assert.equal(statement, 'INSERT INTO access FORMAT JSONEachRow');
      assertDefaultEntries(rowsText.map((l) => parse<Entry>(l)));
    },
  },
  {
    definition: lokiLogger,
    prefix: '/loki/',
    config: (base) => ({
      endpoint_addrs: `${base}/loki`,
      tenant_id: 'team-a',
      log_labels: { job: 'gw', env: 'test' },
      log_format: { method: '$method', path: '{{request.path}}', status: '$status' },
    }),
    check([req]) {
      assert.equal(req?.url, '/loki/loki/api/v1/push');
      assert.equal(req.headers['x-scope-orgid'], 'team-a');
      const { streams } = json<{ streams: { stream: unknown; values: [string, string][] }[] }>(req);
      assert.equal(streams.length, 1);
      assert.deepEqual(streams[0]!.stream, { job: 'gw', env: 'test' });
      const values = streams[0]!.values;
      assert.equal(values.length, 2);
      assert.match(values[0]![0], /^\d{19}$/, 'nanosecond timestamps as strings');
      assert.deepEqual(JSON.parse(values[0]![1]), { method: 'POST', path: '/orders', status: '201' });
      assert.deepEqual(JSON.parse(values[1]![1]), { method: 'GET', path: '/health', status: '503' });
    },
  },
  {
    definition: splunkHecLogging,
    prefix: '/splunk/',
    config: (base) => ({
      endpoint: { uri: `${base}/splunk/services/collector`, token: 'hec-token', channel: 'ch-1' },
    }),
    check([req]) {
      assert.equal(req?.headers.authorization, 'Splunk hec-token');
      assert.equal(req.headers['x-splunk-request-channel'], 'ch-1');
      const events = lines(req).map((l) =>
        parse<{ sourcetype: string; source: string; time: number; event: Entry }>(l),
      );
      for (const e of events) {
        assert.equal(e.sourcetype, '_json');
        assert.equal(e.source, 'featherbit-splunk-hec-logging');
        assert.equal(typeof e.time, 'number');
      }
      assertDefaultEntries(events.map((e) => e.event));
    },
  },
  {
    definition: loggly,
    prefix: '/bulk/',
    config: (base) => ({ customer_token: 'cust-1', tags: ['gw', 'test'], host: base }),
    check([req]) {
      assert.equal(req?.url, '/bulk/cust-1/tag/gw,test/');
      assertDefaultEntries(lines(req).map((l) => parse<Entry>(l)));
    },
  },
  {
    definition: googleCloudLogging,
    prefix: '/gcl/',
    config: (base) => ({
      auth_config: {
        client_email: 'logger@proj.iam.gserviceaccount.com',
        private_key: PRIVATE_PEM,
        project_id: 'proj',
        token_uri: `${base}/gcl/token`,
        entries_uri: `${base}/gcl/v2/entries:write`,
      },
      resource: { type: 'global' },
      log_id: 'gw',
    }),
    check([token, write]) {
      assert.equal(token?.url, '/gcl/token');
      const form = new URLSearchParams(token.body.toString('utf8'));
      assert.equal(form.get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
      const [header, claims, signature] = (form.get('assertion') ?? '').split('.') as [
        string,
        string,
        string,
      ];
      const valid = verify(
        'RSA-SHA256',
        Buffer.from(`${header}.${claims}`),
        KEY.publicKey,
        Buffer.from(signature, 'base64url'),
      );
      assert.ok(valid, 'the JWT is RS256-signed with the service account key');
      const payload = parse<{ iss: string; aud: string }>(Buffer.from(claims, 'base64url'));
      assert.equal(payload.iss, 'logger@proj.iam.gserviceaccount.com');
      assert.match(payload.aud, /\/gcl\/token$/);
      assert.equal(write?.url, '/gcl/v2/entries:write');
      assert.equal(write.headers.authorization, 'Bearer tok-1');
      const { entries } = json<{ entries: GclEntry[] }>(write);
      assert.equal(entries[0]!.logName, 'projects/proj/logs/gw');
      assert.deepEqual(entries[0]!.resource, { type: 'global' });
      assert.equal(entries[0]!.httpRequest.requestMethod, 'POST');
      assert.equal(entries[0]!.httpRequest.status, 201);
      assert.match(entries[0]!.timestamp, /^\d{4}-\d\d-\d\dT/);
      assertDefaultEntries(entries.map((e) => e.jsonPayload));
    },
  },
  {
    definition: slsLogger,
    prefix: '/logstores/',
    config: (_base, port) => ({
      host: 'http://127.0.0.1',
      port,
      project: 'proj',
      logstore: 'gw',
      access_key_id: 'AKID',
      access_key_secret: 'secret',
    }),
    check([req], port) {
      assert.equal(req?.url, '/logstores/gw/shards/lb');
      assert.equal(req.headers.host, `proj.127.0.0.1:${port}`);
      assert.equal(req.headers['content-type'], 'application/x-protobuf');
      assert.equal(req.headers['x-log-apiversion'], '0.6.0');
      assert.equal(req.headers['x-log-bodyrawsize'], String(req.body.length));
      const md5 = createHash('md5').update(req.body).digest('hex').toUpperCase();
      assert.equal(req.headers['content-md5'], md5);
      const toSign = [
        'POST',
        md5,
        'application/x-protobuf',
        req.headers.date,
        `x-log-apiversion:0.6.0\nx-log-bodyrawsize:${req.body.length}\nx-log-signaturemethod:hmac-sha1`,
        '/logstores/gw/shards/lb',
      ].join('\n');
      const signature = createHmac('sha1', 'secret').update(toSign).digest('base64');
      assert.equal(req.headers.authorization, `LOG AKID:${signature}`);
      const logs = messages(decodeProto(req.body), 1);
      assert.equal(logs.length, 2);
      assert.ok((int(logs[0]!, 1) ?? 0) > 1_600_000_000, 'Time in seconds');
      const first = keyValues(logs[0]!, 2);
      assert.equal(first.route, 'orders');
      assert.equal(parse<Entry['request']>(first.request!).method, 'POST');
      assert.equal(parse<Entry['response']>(first.response!).status, 201);
    },
  },
  {
    definition: tencentCloudCls,
    prefix: '/structuredlog',
    config: (_base, port) => ({
      cls_host: `127.0.0.1:${port}`,
      scheme: 'http',
      cls_topic: 'topic-1',
      secret_id: 'SID',
      secret_key: 'SKEY',
      global_tag: { cluster: 'eu' },
      log_format: { host: '$host', status: '{{response.status}}' },
    }),
    check([req]) {
      assert.equal(req?.url, '/structuredlog?topic_id=topic-1');
      assert.equal(req.headers['content-type'], 'application/x-protobuf');
      const auth = Object.fromEntries(
        (req.headers.authorization ?? '').split('&').map((p) => p.split('=') as [string, string]),
      );
      assert.equal(auth['q-sign-algorithm'], 'sha1');
      assert.equal(auth['q-ak'], 'SID');
      assert.equal(auth['q-url-param-list'], 'topic_id');
      const keyTime = auth['q-key-time']!;
      const signKey = createHmac('sha1', 'SKEY').update(keyTime).digest('hex');
      const info = createHash('sha1').update('post\n/structuredlog\ntopic_id=topic-1\n\n').digest('hex');
      const expected = createHmac('sha1', signKey).update(`sha1\n${keyTime}\n${info}\n`).digest('hex');
      assert.equal(auth['q-signature'], expected);
      const groups = messages(decodeProto(req.body), 1);
      assert.equal(groups.length, 1);
      const logs = messages(groups[0]!, 1);
      assert.deepEqual(
        logs.map((l) => keyValues(l, 2)),
        [
          { host: 'api.test', status: '201' },
          { host: 'api.test', status: '503' },
        ],
      );
      assert.ok((int(logs[0]!, 1) ?? 0) > 1_600_000_000_000, 'time in milliseconds');
      assert.deepEqual(keyValues(groups[0]!, 5), { cluster: 'eu' });
      assert.ok(text(groups[0]!, 4) !== undefined, 'source is set');
    },
  },
  {
    definition: skywalkingLogger,
    prefix: '/sw-logs/',
    config: (base) => ({
      endpoint_addr: `${base}/sw-logs`,
      service_name: 'gw',
      service_instance_name: 'gw-1',
    }),
    check([req]) {
      assert.equal(req?.url, '/sw-logs/v3/logs');
      const logs = json<LogData[]>(req);
      assert.equal(logs[0]!.service, 'gw');
      assert.equal(logs[0]!.serviceInstance, 'gw-1');
      assert.equal(logs[0]!.endpoint, '/orders');
      assertDefaultEntries(logs.map((l) => parse<Entry>(l.body.json.json)));
    },
  },
  {
    definition: lago,
    prefix: '/lago/',
    config: (base) => ({
      endpoint: `${base}/lago`,
      token: 'lago-key',
      event_transaction_id: 'req_${request_uri}',
      subscription_id: 'cus_{{request.headers.x-sub}}',
      event_code: 'api_calls',
      log_format: { status: '$status' },
    }),
    check([req]) {
      assert.equal(req?.url, '/lago/api/v1/events/batch');
      assert.equal(req.headers.authorization, 'Bearer lago-key');
      const { events } = json<{
        events: {
          transaction_id: string;
          external_subscription_id: string;
          code: string;
          timestamp: number;
          properties: unknown;
        }[];
      }>(req);
      assert.equal(events.length, 2);
      assert.equal(events[0]!.transaction_id, 'req_/orders?id=7');
      assert.equal(events[0]!.external_subscription_id, 'cus_sub-1');
      assert.equal(events[0]!.code, 'api_calls');
      assert.equal(typeof events[0]!.timestamp, 'number');
      assert.deepEqual(events[0]!.properties, { status: '201' });
      assert.equal(events[1]!.external_subscription_id, 'cus_sub-2');
    },
  },
  {
    definition: opentelemetry,
    prefix: '/otel/',
    tracer: true,
    config: (base) => ({ endpoint: `${base}/otel`, service_name: 'gw' }),
    check([req]) {
      assert.equal(req?.url, '/otel/v1/traces');
      assert.equal(req.headers['content-type'], 'application/json');
      const [resourceSpans] = json<OtlpExport>(req).resourceSpans;
      assert.deepEqual(resourceSpans!.resource.attributes, [
        { key: 'service.name', value: { stringValue: 'gw' } },
      ]);
      const spans = resourceSpans!.scopeSpans[0]!.spans;
      assert.equal(spans.length, 2);
      const [a, b] = spans as [OtlpSpan, OtlpSpan];
      assert.match(a.traceId, /^[0-9a-f]{32}$/);
      assert.match(a.spanId, /^[0-9a-f]{16}$/);
      assert.equal(a.kind, 2);
      assert.ok(BigInt(a.endTimeUnixNano) >= BigInt(a.startTimeUnixNano));
      // The SDK's OTLP/JSON encoder writes int64 as a JSON number; proto3 JSON readers take both forms.
      const status = a.attributes.find((x) => x.key === 'http.response.status_code')?.value;
      assert.equal(Number((status as { intValue?: unknown } | undefined)?.intValue), 201);
      assert.equal(a.status.code, 0);
      assert.equal(b.status.code, 2, 'a 5xx marks the span as an error');
    },
  },
  {
    definition: zipkin,
    prefix: '/zipkin/',
    tracer: true,
    config: (base) => ({
      endpoint: `${base}/zipkin/api/v2/spans`,
      service_name: 'gw',
      server_addr: '10.0.0.1',
    }),
    check([req]) {
      assert.equal(req?.url, '/zipkin/api/v2/spans');
      const spans = json<ZipkinSpan[]>(req);
      assert.equal(spans.length, 2);
      const [a] = spans as [ZipkinSpan];
      assert.equal(a.kind, 'SERVER');
      assert.match(a.traceId, /^[0-9a-f]{32}$/);
      assert.match(a.id, /^[0-9a-f]{16}$/);
      assert.ok(a.timestamp > 1_600_000_000_000_000, 'microseconds');
      assert.ok(a.duration >= 1);
      assert.deepEqual(a.localEndpoint, { serviceName: 'gw', ipv4: '10.0.0.1' });
      assert.deepEqual(a.remoteEndpoint, { ipv4: '192.0.2.10', port: 40000 });
      assert.equal(a.tags['http.status_code'], '201');
      assert.equal(a.tags['http.path'], '/orders');
    },
  },
  {
    definition: skywalking,
    prefix: '/skywalking/',
    tracer: true,
    config: (base) => ({
      endpoint_addr: `${base}/skywalking`,
      service_name: 'gw',
      service_instance_name: 'gw-1',
    }),
    check([req]) {
      assert.equal(req?.url, '/skywalking/v3/segments');
      const segments = json<Segment[]>(req);
      assert.equal(segments.length, 2);
      const [a] = segments as [Segment];
      assert.equal(a.service, 'gw');
      assert.equal(a.serviceInstance, 'gw-1');
      const [span] = a.spans as [Segment['spans'][number]];
      assert.equal(span.spanType, 'Entry');
      assert.equal(span.spanLayer, 'Http');
      assert.equal(span.spanId, 0);
      assert.equal(span.parentSpanId, -1);
      assert.equal(span.operationName, '/orders');
      assert.ok(span.endTime >= span.startTime);
      assert.equal(segments[1]!.spans[0]!.isError, true);
    },
  },
];

for (const row of rows) {
  const variant = row.definition.type === 'http-logger' ? ` (${row.prefix.slice(1, -1)})` : '';
  test(`${row.definition.type}${variant}: ships in the service's wire format and leaves through success at once`, async () => {
    const base = `http://127.0.0.1:${collector.port}`;
    const settings = row.config(base, collector.port);
    const nodes: NodeInstance[] = [];
    const ctxs = contexts();
    if (row.tracer === true) {
      const start = instantiate(row.definition, { ...settings, phase: 'start' }, templatedEnv());
      const end = instantiate(row.definition, { ...settings, phase: 'end' }, templatedEnv());
      for (const ctx of ctxs) {
        const status = ctx.response.status;
        ctx.response.status = 0;
        assert.equal(runNow(start, ctx), 'success');
        ctx.response.status = status;
        assert.equal(runNow(end, ctx), 'success');
      }
      nodes.push(start, end);
    } else {
      const node = instantiate(row.definition, settings, templatedEnv());
      for (const ctx of ctxs) assert.equal(runNow(node, ctx), 'success');
      nodes.push(node);
    }
    const seen = () => collector.requests.filter((r) => r.url.startsWith(row.prefix));
    assert.equal(seen().length, 0, 'nothing is sent on the request path');
    for (const node of nodes) await node.close?.();
    row.check(seen(), collector.port);
  });
}
