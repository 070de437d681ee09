/** Loggers that write to sockets, files, the gateway log and the metrics registry. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Context } from '../../../src/core/context.js';
import { createGatewayScope } from '../../../src/observability/gateway-scope.js';
import { datadog } from '../../../src/plugins/observability/datadog.js';
import { errorLogLogger } from '../../../src/plugins/observability/error-log-logger.js';
import { fileLogger } from '../../../src/plugins/observability/file-logger.js';
import { logging } from '../../../src/plugins/observability/logging.js';
import { prometheus } from '../../../src/plugins/observability/prometheus.js';
import { syslog } from '../../../src/plugins/observability/syslog.js';
import { tcpLogger } from '../../../src/plugins/observability/tcp-logger.js';
import { udpLogger } from '../../../src/plugins/observability/udp-logger.js';
import { capturingLogger, instantiate, requestContext } from '../../support/plugin-env.js';
import { tempDir } from '../../support/temp-dir.js';
import {
  parse,
  startTcpCollector,
  startUdpCollector,
  type Entry,
  type TcpCollector,
  type UdpCollector,
} from './fakes.js';
import { runNow, templatedEnv } from '../../support/node-run.js';

const closers: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const close of closers) await close();
});

async function tcp(): Promise<TcpCollector> {
  const c = await startTcpCollector();
  closers.push(() => c.close());
  return c;
}

async function udp(): Promise<UdpCollector> {
  const c = await startUdpCollector();
  closers.push(() => c.close());
  return c;
}

function served(path: string, status: number): Context {
  const ctx = requestContext({ url: path, headers: { host: 'api.test', 'x-req': 'r1' } });
  ctx.route = 'r';
  ctx.response.status = status;
  ctx.response.setBody('hello', 'text/plain');
  return ctx;
}

test('tcp-logger: one connection per batch carries newline-delimited JSON entries', async () => {
  const collector = await tcp();
  const node = instantiate(tcpLogger, { host: '127.0.0.1', port: collector.port }, templatedEnv());
  runNow(node, served('/a', 200));
  runNow(node, served('/b', 404));
  await node.close?.();
  const text = await collector.waitForText((t) => t.split('\n').length >= 3);
  const entries = text
    .trim()
    .split('\n')
    .map((l) => parse<Entry>(l));
  assert.deepEqual(
    entries.map((e) => [e.request.uri, e.response.status]),
    [
      ['/a', 200],
      ['/b', 404],
    ],
  );
  assert.equal(collector.streams.length, 1, 'one connection for the batch');
});

test('udp-logger: each entry is one JSON datagram', async () => {
  const collector = await udp();
  const node = instantiate(
    udpLogger,
    { host: '127.0.0.1', port: collector.port, log_format: { p: '$uri', s: '$status' } },
    templatedEnv(),
  );
  runNow(node, served('/a', 200));
  runNow(node, served('/b', 500));
  await node.close?.();
  const datagrams = await collector.waitFor(2);
  assert.deepEqual(
    datagrams.map((d) => parse<unknown>(d)),
    [
      { p: '/a', s: '200' },
      { p: '/b', s: '500' },
    ],
  );
});

const RFC5424 = /^<134>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) switchyard (\d+) access - (\{.*\})$/s;

test('syslog: TCP carries RFC 5424 messages framed by octet counting (RFC 6587)', async () => {
  const collector = await tcp();
  const node = instantiate(
    syslog,
    { host: '127.0.0.1', port: collector.port, log_format: { path: '{{request.path}}' } },
    templatedEnv(),
  );
  runNow(node, served('/one', 200));
  runNow(node, served('/two', 200));
  await node.close?.();
  let text = await collector.waitForText((t) => t.includes('/two'));
  const messages: string[] = [];
  while (text.length > 0) {
    const space = text.indexOf(' ');
    const length = Number(text.slice(0, space));
    const bytes = Buffer.from(text.slice(space + 1));
    messages.push(bytes.subarray(0, length).toString());
    text = bytes.subarray(length).toString();
  }
  assert.equal(messages.length, 2);
  const match = RFC5424.exec(messages[0]!);
  assert.ok(match, messages[0]);
  assert.equal(Number(match[3]), process.pid);
  assert.deepEqual(JSON.parse(match[4]!), { path: '/one' });
});

test('syslog: UDP sends one RFC 5424 message per datagram', async () => {
  const collector = await udp();
  const node = instantiate(
    syslog,
    { host: '127.0.0.1', port: collector.port, sock_type: 'udp' },
    templatedEnv(),
  );
  runNow(node, served('/one', 200));
  await node.close?.();
  const [datagram] = await collector.waitFor(1);
  const match = RFC5424.exec(datagram!.toString());
  assert.ok(match, datagram!.toString());
  assert.equal(parse<Entry>(match[4]!).request.uri, '/one');
});

test('error-log-logger: ships only requests that recorded node errors', async () => {
  const collector = await tcp();
  const node = instantiate(errorLogLogger, { host: '127.0.0.1', port: collector.port }, templatedEnv());
  runNow(node, served('/fine', 200));
  const failed = served('/broken', 502);
  failed.errors.push({ node_id: 'up', code: 'UPSTREAM_CONNECTION_ERROR', message: 'refused', metadata: {} });
  runNow(node, failed);
  await node.close?.();
  const text = await collector.waitForText((t) => t.endsWith('\n'));
  const entries = text
    .trim()
    .split('\n')
    .map((l) => parse<Entry>(l));
  assert.equal(entries.length, 1);
  assert.equal(entries[0]!.request.uri, '/broken');
  assert.deepEqual(entries[0]!.errors, [
    { node_id: 'up', code: 'UPSTREAM_CONNECTION_ERROR', message: 'refused' },
  ]);
});

test('datadog: DogStatsD counter, latency and size metrics with route, status and constant tags', async () => {
  const collector = await udp();
  const node = instantiate(
    datadog,
    {
      port: collector.port,
      namespace: 'gw',
      constant_tags: ['source:switchyard'],
      include_method: true,
      include_path: true,
    },
    templatedEnv(),
  );
  const ctx = served('/items', 200);
  ctx.setConsumer({ name: 'alice' });
  runNow(node, ctx);
  runNow(node, served('/other', 503));
  await node.close?.();
  const [datagram] = await collector.waitFor(1);
  const lines = datagram!.toString().split('\n');
  assert.equal(lines.length, 8, 'both requests coalesced into one datagram');
  const tags =
    '|#source:switchyard,route_name:r,consumer:alice,response_status:200,response_status_class:2xx,scheme:http,method:GET,path:/items';
  assert.equal(lines[0], `gw.request.counter:1|c${tags}`);
  assert.match(lines[1]!, /^gw\.request\.latency:[\d.]+\|h\|#/);
  assert.equal(lines[2], `gw.ingress.size:0|ms${tags}`);
  assert.equal(lines[3], `gw.egress.size:5|ms${tags}`);
  assert.match(lines[4]!, /response_status:503,response_status_class:5xx/);
});

test('file-logger: appends newline-delimited entries; a relative path is beside gateway.yaml', async () => {
  const dir = tempDir();
  closers.push(() => dir.remove());
  const env = templatedEnv({ configDir: dir.path });
  const node = instantiate(fileLogger, { path: 'access.log', log_format: { u: '$uri' } }, env);
  runNow(node, served('/a', 200));
  runNow(node, served('/b', 200));
  await node.close?.();
  const again = instantiate(
    fileLogger,
    { path: join(dir.path, 'access.log'), log_format: { u: '$uri' } },
    env,
  );
  runNow(again, served('/c', 200));
  await again.close?.();
  assert.equal(readFileSync(join(dir.path, 'access.log'), 'utf8'), '{"u":"/a"}\n{"u":"/b"}\n{"u":"/c"}\n');
  assert.deepEqual(env.warnings, []);
});

test('file-logger: a missing directory is a load warning, and writing fails without touching requests', async () => {
  const env = templatedEnv();
  const node = instantiate(fileLogger, { path: '/nonexistent-dir-switchyard/access.log' }, env);
  assert.equal(env.warnings[0]?.key, 'path');
  assert.equal(runNow(node, served('/a', 200)), 'success');
  await node.close?.();
});

test('logging: writes the access entry to the gateway log; headers only with include_headers', () => {
  const { logger, records } = capturingLogger();
  const plain = instantiate(logging, {}, templatedEnv({ logger }));
  const detailed = instantiate(logging, { include_headers: true }, templatedEnv({ logger }));
  assert.equal(runNow(plain, served('/a', 201)), 'success');
  runNow(detailed, served('/b', 200));
  const [first, second] = records as unknown as [Entry & { msg: string; level: number }, Entry];
  assert.equal(first.msg, 'access');
  assert.equal(first.level, 30);
  assert.equal(first.request.uri, '/a');
  assert.equal(first.response.status, 201);
  assert.equal(first.response.size, 5);
  assert.equal(first.request.headers, undefined);
  assert.equal(second.request.headers['x-req'], 'r1');
  assert.equal(second.response.headers['content-type'], 'text/plain');
});

test('prometheus: counts requests per consumer and route on the gateway registry', async () => {
  const scope = createGatewayScope();
  const a = instantiate(prometheus, {}, templatedEnv({ scope }));
  const b = instantiate(prometheus, { prefer_name: true }, templatedEnv({ scope }));
  const withConsumer = served('/a', 200);
  withConsumer.setConsumer({ name: 'alice' });
  runNow(a, withConsumer);
  runNow(b, withConsumer);
  runNow(a, served('/b', 200));
  const { body } = await scope.metrics.render();
  assert.match(body, /gateway_consumer_requests_total\{consumer="alice",route="r"\} 2/);
  assert.match(body, /gateway_consumer_requests_total\{consumer="anonymous",route="r"\} 1/);
});
