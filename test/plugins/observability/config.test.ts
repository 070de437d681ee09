/** Configuration rejections, and which configurations read the response body (SPEC "Streaming"). */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { parse } from 'yaml';
import { checkGatewayShape } from '../../../src/config/gateway.js';
import { compileGateway } from '../../../src/engine/compile.js';
import { templateFactory } from '../../../src/engine/templates.js';
import { silentLogger } from '../../../src/core/logger.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { PluginDefinition } from '../../../src/core/plugin.js';
import { registry } from '../../../src/plugins/index.js';
import { clickhouseLogger } from '../../../src/plugins/observability/clickhouse-logger.js';
import { elasticsearchLogger } from '../../../src/plugins/observability/elasticsearch-logger.js';
import { errorLogLogger } from '../../../src/plugins/observability/error-log-logger.js';
import { googleCloudLogging } from '../../../src/plugins/observability/google-cloud-logging.js';
import { httpLogger } from '../../../src/plugins/observability/http-logger.js';
import { lago } from '../../../src/plugins/observability/lago.js';
import { opentelemetry } from '../../../src/plugins/observability/opentelemetry.js';
import { splunkHecLogging } from '../../../src/plugins/observability/splunk-hec-logging.js';
import { syslog } from '../../../src/plugins/observability/syslog.js';
import { tcpLogger } from '../../../src/plugins/observability/tcp-logger.js';
import { tencentCloudCls } from '../../../src/plugins/observability/tencent-cloud-cls.js';
import { zipkin } from '../../../src/plugins/observability/zipkin.js';
import { instantiate } from '../../support/plugin-env.js';
import { assertConfigError, assertSchemaRejects, templatedEnv } from '../../support/node-run.js';

after(() => closeAllPools());

const make = (definition: PluginDefinition<never, string>, config: unknown) => () =>
  instantiate(definition, config, templatedEnv());

test('config: endpoints must be http(s) URLs without credentials', () => {
  assertSchemaRejects(make(httpLogger, {}), 'uri');
  assertConfigError(make(httpLogger, { uri: 'ftp://logs' }), 'uri');
  assertConfigError(make(httpLogger, { uri: 'not a url' }), 'uri');
  assertConfigError(make(httpLogger, { uri: 'http://u:p@logs' }), 'uri', /credentials/);
  assertConfigError(make(zipkin, { phase: 'start', endpoint: 'zipkin:9411' }), 'endpoint');
});

test('config: schema rejections carry the key path', () => {
  assertSchemaRejects(make(httpLogger, { uri: 'http://c', concat_method: 'csv' }), 'concat_method');
  assertSchemaRejects(make(httpLogger, { uri: 'http://c', colour: 'red' }), 'colour');
  assertSchemaRejects(
    make(httpLogger, { uri: 'http://c', log_format: { a: { nested: 1 } } }),
    'log_format.a',
  );
  assertSchemaRejects(make(httpLogger, { uri: 'http://c', batch_max_size: 0 }), 'batch_max_size');
  assertSchemaRejects(make(elasticsearchLogger, { endpoint_addr: 'http://es', field: {} }), 'field.index');
  assertSchemaRejects(make(opentelemetry, { phase: 'middle' }), 'phase');
  assertSchemaRejects(
    make(opentelemetry, { phase: 'start', sampler: { name: 'sometimes' } }),
    'sampler.name',
  );
  assertSchemaRejects(
    make(opentelemetry, {
      phase: 'start',
      sampler: { name: 'trace_id_ratio', options: { fraction: 2 } },
    }),
    'sampler.options.fraction',
  );
  assertSchemaRejects(make(zipkin, { phase: 'start' }), 'endpoint');
  const lagoBase = {
    endpoint: 'http://lago',
    token: 't',
    event_transaction_id: '$request_uri',
    subscription_id: '$consumer_name',
    event_code: 'calls',
  };
  assertSchemaRejects(make(lago, { ...lagoBase, batch_max_size: 101 }), 'batch_max_size');
  assertSchemaRejects(make(lago, { ...lagoBase, event_code: undefined }), 'event_code');
});

test('config: semantic rejections from create', () => {
  assertConfigError(make(tcpLogger, { host: 'h', port: 1, tls: true }), 'tls');
  assertConfigError(make(syslog, { host: 'h', tls: true }), 'tls');
  assertConfigError(make(errorLogLogger, { host: 'h', port: 1, tls: true }), 'tls');
  assertConfigError(make(elasticsearchLogger, { field: { index: 'i' } }), 'endpoint_addr');
  assertConfigError(
    make(clickhouseLogger, {
      endpoint_addr: 'http://ch',
      database: 'd',
      logtable: 'x; DROP TABLE y',
    }),
    'logtable',
  );
  assertConfigError(make(splunkHecLogging, { endpoint: { token: 't' } }), 'endpoint.uri');
  assertConfigError(make(googleCloudLogging, {}), 'auth_config');
  assertConfigError(
    make(googleCloudLogging, {
      auth_config: { client_email: 'a@b', private_key: 'not a key', project_id: 'p' },
    }),
    'auth_config.private_key',
  );
  assertConfigError(make(googleCloudLogging, { auth_file: '/nonexistent/sa.json' }), 'auth_file');
  assertConfigError(make(tencentCloudCls, { secret_id: 'i', secret_key: 'k', cls_topic: 't' }), 'cls_host');
  assertConfigError(make(tencentCloudCls, { secret_id: 'i', secret_key: 'k', endpoint: 'h' }), 'cls_topic');
  assertConfigError(
    make(zipkin, { phase: 'end', endpoint: 'http://z', server_addr: 'zipkin.local' }),
    'server_addr',
  );
  assertConfigError(
    make(opentelemetry, { phase: 'end', endpoint: 'http://a', collector: 'http://b' }),
    'collector',
  );
});

/** The sixteen loggers that take `log_format`, each with the least config it needs. */
const WITH_LOG_FORMAT: Record<string, Record<string, unknown>> = {
  'http-logger': { uri: 'http://c' },
  'tcp-logger': { host: 'h', port: 1 },
  'udp-logger': { host: 'h', port: 1 },
  syslog: { host: 'h' },
  'file-logger': { path: '/tmp/x.log' },
  'error-log-logger': { host: 'h', port: 1 },
  'elasticsearch-logger': { endpoint_addr: 'http://es', field: { index: 'i' } },
  'clickhouse-logger': { endpoint_addr: 'http://ch', database: 'd', logtable: 't' },
  'loki-logger': { endpoint_addrs: ['http://loki'] },
  'splunk-hec-logging': { endpoint: { uri: 'http://s', token: 't' } },
  loggly: { customer_token: 't' },
  'google-cloud-logging': { auth_file: 'sa.json' },
  'sls-logger': {
    host: 'h',
    port: 1,
    project: 'p',
    logstore: 'l',
    access_key_id: 'i',
    access_key_secret: 's',
  },
  'tencent-cloud-cls': { cls_host: 'h', cls_topic: 't', secret_id: 'i', secret_key: 'k' },
  'skywalking-logger': { endpoint_addr: 'http://sw' },
  lago: {
    endpoint: 'http://lago',
    token: 't',
    event_transaction_id: '$request_uri',
    subscription_id: '$consumer_name',
    event_code: 'c',
  },
};

const readsBody = (type: string, config: Record<string, unknown>): boolean =>
  registry.get(type)?.readsResponseBody?.(config as never) ?? false;

test('streaming inference: the sixteen log_format loggers buffer only without a format or when it mentions the body', () => {
  assert.equal(Object.keys(WITH_LOG_FORMAT).length, 16);
  for (const [type, config] of Object.entries(WITH_LOG_FORMAT)) {
    assert.ok(registry.has(type), type);
    assert.equal(readsBody(type, config), true, `${type} without log_format buffers`);
    assert.equal(
      readsBody(type, { ...config, log_format: { s: '$status', p: '{{request.path}}' } }),
      false,
      type,
    );
    assert.equal(readsBody(type, { ...config, log_format: { b: '$resp_body' } }), true, `${type} $resp_body`);
    assert.equal(
      readsBody(type, { ...config, log_format: { b: '${resp_body}' } }),
      true,
      `${type} \${resp_body}`,
    );
    assert.equal(readsBody(type, { ...config, log_format: { b: '{{ response.body }}' } }), true, type);
    assert.equal(readsBody(type, { ...config, log_format: { b: '{{request.body}}', n: 3 } }), false, type);
  }
  const lagoConfig = { ...WITH_LOG_FORMAT.lago, log_format: { s: '$status' } };
  assert.equal(readsBody('lago', { ...lagoConfig, event_transaction_id: 'tx-$resp_body' }), true);
  assert.equal(readsBody('lago', { ...lagoConfig, subscription_id: '{{response.body}}' }), true);
});

test('streaming inference: logging and datadog (no log_format) buffer; prometheus and the tracers never do', () => {
  assert.equal(readsBody('logging', {}), true);
  assert.equal(readsBody('datadog', {}), true);
  for (const type of ['prometheus', 'opentelemetry', 'zipkin', 'skywalking']) {
    assert.equal(readsBody(type, { phase: 'end', endpoint: 'http://z' }), false, type);
  }
});

test('streaming inference: an upstream followed by a body-free log_format logger still streams', () => {
  const compile = (logConfig: string) =>
    compileGateway(
      checkGatewayShape(
        parse(`
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 9 }] } }
      - { id: log, type: http-logger, config: ${logConfig} }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: log.in }
      - { from: log.success, to: out.in }
`),
      ),
      { registry, logger: silentLogger, env: {}, templateFactory: templateFactory({}) },
    );
  const streaming = compile(`{ uri: "http://127.0.0.1:9/logs", log_format: { s: "$status" } }`);
  assert.deepEqual(streaming.policies.get('p')?.streaming, ['up']);
  void streaming.close();
  const buffered = compile(`{ uri: "http://127.0.0.1:9/logs" }`);
  assert.deepEqual(buffered.policies.get('p')?.buffering, [{ upstream: 'up', blocked_by: 'log' }]);
  void buffered.close();
});
