/** `log_format` time variables ($time_iso8601, $msec) in loggers and in the shipped logging example. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileLogger } from '../../../src/plugins/observability/file-logger.js';
import { freePort } from '../../support/free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../../support/gateway-process.js';
import { echo, startOrigin } from '../../support/origins.js';
import { instantiate, requestContext } from '../../support/plugin-env.js';
import { tempDir } from '../../support/temp-dir.js';
import { waitFor } from '../../support/wait.js';
import { runNow, templatedEnv } from '../../support/node-run.js';

const closers: (() => unknown)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

test('file-logger: $time_iso8601 and ${msec} render the time the entry was written', async () => {
  const dir = tempDir();
  closers.push(() => dir.remove());
  const env = templatedEnv({ configDir: dir.path });
  const node = instantiate(
    fileLogger,
    {
      path: 'access.log',
      log_format: {
        time: '$time_iso8601',
        ms: '${msec}',
        line: '[$time_iso8601] $method $uri',
        tenant: '$msg_time',
      },
    },
    env,
  );
  const before = Date.now();
  const ctx = requestContext({ url: '/orders/7', headers: { host: 'api.test' } });
  ctx.response.status = 200;
  runNow(node, ctx);
  await node.close?.();
  const afterMs = Date.now();
  const entry = JSON.parse(readFileSync(join(dir.path, 'access.log'), 'utf8')) as Record<string, string>;
  assert.match(entry.time!, ISO);
  const at = Date.parse(entry.time!);
  assert.ok(at >= before - 1 && at <= afterMs + 1, `${entry.time} within the run`);
  assert.match(entry.ms!, /^\d{10}\.\d{3}$/);
  assert.ok(Math.abs(Number(entry.ms) * 1000 - at) < 1000);
  const line = /^\[(\S+)\] GET \/orders\/7$/.exec(entry.line!);
  assert.ok(line, entry.line);
  assert.match(line[1]!, ISO);
  // `$msg_time` stays what it always was: the context message key `time` (absent here).
  assert.equal(entry.tenant, '');
  assert.deepEqual(env.warnings, []);
});

test('examples/logging: the file-logger entry carries the request time, not ""', async () => {
  const dir = tempDir();
  closers.push(() => dir.remove());
  const origin = await startOrigin(echo('backend'));
  closers.push(() => origin.close());
  const [port, admin] = [await freePort(), await freePort()];
  const log = join(dir.path, 'access.log');
  const gw: GatewayProcess = spawnGateway(['--gateway-config', 'examples/logging/gateway.yaml'], {
    GATEWAY_PORT: String(port),
    GATEWAY_BIND: '127.0.0.1',
    ADMIN_PORT: String(admin),
    UPSTREAM_PORT: String(origin.port),
    ACCESS_LOG: log,
    OTEL_COLLECTOR: `http://127.0.0.1:${await freePort()}`,
    LOKI_URL: `http://127.0.0.1:${await freePort()}`,
  });
  closers.push(() => gw.stop());
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
  const before = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}/api/hello`, { headers: { 'user-agent': 'probe/1' } });
  assert.equal(res.status, 200, gw.output());
  await res.arrayBuffer();
  await waitFor(() => existsSync(log) && readFileSync(log, 'utf8').includes('\n'), {
    timeoutMs: 20_000,
    what: 'the file-logger entry',
  });
  const entry = JSON.parse(readFileSync(log, 'utf8').split('\n')[0]!) as Record<string, unknown>;
  assert.equal(entry.request, 'GET /api/hello');
  assert.equal(entry.agent, 'probe/1');
  assert.match(String(entry.time), ISO);
  const at = Date.parse(String(entry.time));
  assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `${String(entry.time)} is now`);
});
