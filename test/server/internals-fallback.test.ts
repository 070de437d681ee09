/**
 * The lean HTTP/1.1 server and client stand on node's private `_http_common` parser binding
 * (src/runtime/native-http-parser.ts). It is probed once at start-up; when a Node release changes
 * it, the gateway logs one WARN and serves through node:http and undici instead of failing.
 * SWITCHYARD_STUB_INTERNALS=http-parser shows the probe a binding without `execute`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnGateway, waitForHttp, type GatewayProcess } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { startOrigin, echo, type Origin } from '../support/origins.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const WARNING =
  "node's HTTP parser binding is not the one the lean HTTP/1.1 server and client were written for";

let origin: Origin;
const dir = tempDir('switchyard-internals-');

before(async () => {
  origin = await startOrigin(echo('origin'));
});
after(async () => {
  await origin.close();
  dir.remove();
});

/** A gateway with the default (lean) HTTP/1.1 server and client, proxying everything to `origin`. */
async function start(name: string, env: NodeJS.ProcessEnv): Promise<{ gw: GatewayProcess; port: number }> {
  const port = await freePort();
  const system = join(dir.path, `${name}-system.yaml`);
  const gateway = join(dir.path, `${name}-gateway.yaml`);
  writeFileSync(system, `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: info }\n`);
  writeFileSync(
    gateway,
    [
      'routes:',
      '  - { name: all, match: { path: /* }, policy: proxy }',
      'policies:',
      '  - name: proxy',
      '    nodes:',
      '      - { id: listener, type: listener }',
      `      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }], timeout_ms: 5000 } }`,
      '      - { id: client, type: client }',
      '    edges:',
      '      - { from: listener.out, to: up.in }',
      '      - { from: up.success, to: client.in }',
      '',
    ].join('\n'),
  );
  const gw = spawnGateway(['--system-config', system, '--gateway-config', gateway], env);
  await waitForHttp(`http://127.0.0.1:${port}/ready`, 60000);
  return { gw, port };
}

/** One POST with a body on a fresh connection: status, response body and the raw response header names. */
function post(port: number, body: string): Promise<{ status: number; body: string; headerNames: string[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/echo?x=1',
        agent: false,
        headers: { 'content-type': 'text/plain' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            headerNames: res.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The `data plane listening` log line's `http1` field. */
function http1Front(output: string): unknown {
  const line = output.split('\n').find((l) => l.includes('"data plane listening"'));
  return line === undefined ? undefined : (JSON.parse(line) as { http1?: unknown }).http1;
}

/**
 * Which client spoke to the origin, told by the order of its header lines: undici writes
 * `connection` right after `host`; the lean client writes the forwarded headers first.
 */
function upstreamClient(): 'undici' | 'lean' {
  const seen = origin.requests.at(-1);
  assert.ok(seen !== undefined, 'the origin got the request');
  const names = seen.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase());
  return names.indexOf('connection') === 1 ? 'undici' : 'lean';
}

function count(output: string, needle: string): number {
  return output.split('\n').filter((l) => l.includes(needle)).length;
}

test('a gateway whose parser binding passes the probe serves through the lean front and logs no fallback', async () => {
  const { gw, port } = await start('real', {});
  try {
    const answer = await post(port, 'hello lean');
    assert.equal(answer.status, 200);
    assert.equal((JSON.parse(answer.body) as { body: string }).body, 'hello lean');
    await waitFor(() => http1Front(gw.output()) !== undefined, { what: 'the listening line' });
    assert.equal(http1Front(gw.output()), 'lean');
    assert.equal(upstreamClient(), 'lean');
    assert.equal(count(gw.output(), WARNING), 0);
  } finally {
    await gw.stop();
  }
});

test('a stubbed parser binding: one WARN, and the gateway serves through node:http and undici', async () => {
  const { gw, port } = await start('stubbed', { SWITCHYARD_STUB_INTERNALS: 'http-parser' });
  try {
    for (let i = 0; i < 3; i++) {
      const answer = await post(port, `hello fallback ${i}`);
      assert.equal(answer.status, 200, answer.body);
      const seen = JSON.parse(answer.body) as { method: string; url: string; body: string };
      assert.deepEqual([seen.method, seen.url, seen.body], ['POST', '/echo?x=1', `hello fallback ${i}`]);
    }
    await waitFor(() => http1Front(gw.output()) !== undefined, { what: 'the listening line' });
    assert.equal(http1Front(gw.output()), 'node');
    assert.equal(upstreamClient(), 'undici');
    assert.equal(count(gw.output(), WARNING), 1, gw.output());
    const warning = JSON.parse(
      gw
        .output()
        .split('\n')
        .find((l) => l.includes(WARNING)) ?? '{}',
    ) as {
      level?: unknown;
      problem?: unknown;
    };
    assert.equal(warning.problem, 'HTTPParser.prototype.execute is not a function');
    assert.ok(warning.level === 40 || warning.level === 'warn', `level ${String(warning.level)}`);
    assert.equal(gw.child.exitCode, null, 'the gateway is still running');
  } finally {
    await gw.stop();
  }
});
