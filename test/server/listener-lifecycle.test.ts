import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Agent, request } from 'node:https';
import { BASE_YAML } from '../admin/harness.js';
import { startGateway } from '../support/in-process.js';
import { createAuthority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir();
after(() => dir.remove());

const GATEWAY = BASE_YAML;

/** How long shutdown takes; the grace period is 30 s, so anything near it means idle connections were waited on. */
async function stopMs(stop: () => Promise<void>): Promise<number> {
  const started = Date.now();
  await stop();
  return Date.now() - started;
}

test('listener: an idle keep-alive connection does not hold shutdown (cleartext, HTTP/2 sniffing on)', async () => {
  const g = await startGateway(GATEWAY, {
    systemYaml:
      'listener: { bind: 127.0.0.1, port: 0 }\nhttp2: { enabled: true }\ntimeouts: { shutdown_timeout_seconds: 30 }\n',
  });
  const res = await fetch(`${g.url}/hello`);
  assert.equal(await res.text(), 'hello');
  assert.ok((await stopMs(() => g.stop())) < 10_000, 'shutdown waited for an idle keep-alive connection');
});

test('listener: an idle keep-alive connection does not hold shutdown (TLS)', async () => {
  const ca = createAuthority(dir.path);
  const leaf = ca.issue('gw', { dns: ['localhost'], ips: ['127.0.0.1'] });
  const g = await startGateway(GATEWAY, {
    systemYaml: `listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 30 }\ntls: { cert_path: ${leaf.cert}, key_path: ${leaf.key} }\n`,
  });
  const agent = new Agent({ keepAlive: true, ca: ca.certPem });
  const body = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port: g.port, path: '/hello', agent, servername: 'localhost' }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
  assert.equal(body, 'hello');
  assert.ok((await stopMs(() => g.stop())) < 10_000, 'shutdown waited for an idle keep-alive connection');
  agent.destroy();
});

test('listener: a client that never finishes its request headers is answered 408 and closed after connection_seconds', async () => {
  const g = await startGateway(GATEWAY, {
    systemYaml:
      'listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { connection_seconds: 1, shutdown_timeout_seconds: 5 }\n',
  });
  try {
    const socket = connect({ host: '127.0.0.1', port: g.port });
    let received = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.write('GET /hello HTTP/1.1\r\nHost: slow.test\r\nX-Slow: ');
    await waitFor(() => closed, { timeoutMs: 15_000, what: 'the slow client to be cut' });
    assert.match(received, /^HTTP\/1\.1 408/);
  } finally {
    await g.stop();
  }
});
