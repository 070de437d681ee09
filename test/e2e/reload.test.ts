import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startGateway } from '../support/in-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';

const mockPolicy = (body: string, delay = 0) => `
routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: "${body}", content_type: text/plain, delay: ${delay} } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

function captureLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

async function body(url: string): Promise<string> {
  return (await fetch(url)).text();
}

test('reload: editing gateway.yaml is picked up by the watcher and served', async () => {
  const dir = tempDir();
  const path = join(dir.path, 'gateway.yaml');
  writeFileSync(path, mockPolicy('one'));
  const gw = await startGateway('', { gatewayPath: path });
  try {
    assert.equal(await body(`${gw.url}/x`), 'one');
    writeFileSync(path, mockPolicy('two'));
    await waitFor(async () => (await body(`${gw.url}/x`)) === 'two', { what: 'the edited config to serve' });
  } finally {
    await gw.stop();
    dir.remove();
  }
});

test('reload: an invalid edit is rejected at WARN and the previous config keeps serving', async () => {
  const dir = tempDir();
  const path = join(dir.path, 'gateway.yaml');
  writeFileSync(path, mockPolicy('good'));
  const { logger, lines } = captureLogger();
  const gw = await startGateway('', { gatewayPath: path, logger });
  try {
    writeFileSync(path, mockPolicy('bad').replace('type: mocking', 'type: nonexistent'));
    await waitFor(() => lines.some((l) => l.level === 40 && String(l.msg).includes('rejected')), {
      what: 'the rejection warning',
    });
    const warning = lines.find((l) => l.level === 40 && String(l.msg).includes('rejected'));
    assert.match(JSON.stringify(warning?.errors), /Unknown plugin type: nonexistent/);
    assert.equal(await body(`${gw.url}/x`), 'good');
  } finally {
    await gw.stop();
    dir.remove();
  }
});

test('reload: apply rejects a bad config with every issue and keeps the running runtime', async () => {
  const gw = await startGateway(mockPolicy('kept'));
  try {
    const before = gw.gateway.runtime;
    await assert.rejects(
      gw.gateway.apply(parseGatewayConfig(mockPolicy('x').replace('m.success', 'm.nope')), 'admin'),
      (err: unknown) => err instanceof ConfigRejected && err.issues.some((i) => i.message.includes("'nope'")),
    );
    assert.equal(gw.gateway.runtime, before);
    assert.equal(await body(`${gw.url}/x`), 'kept');
  } finally {
    await gw.stop();
  }
});

test('reload: an in-flight request finishes on the graph it started on', async () => {
  const gw = await startGateway(mockPolicy('old', 0.4));
  try {
    const inflight = body(`${gw.url}/x`);
    // Wait until the request is inside the old runtime before swapping.
    await waitFor(() => gw.gateway.inflight > 0, { what: 'the request to start' });
    await gw.gateway.apply(parseGatewayConfig(mockPolicy('new')), 'admin');
    assert.equal(await body(`${gw.url}/x`), 'new');
    assert.equal(await inflight, 'old');
  } finally {
    await gw.stop();
  }
});

test('reload: swapping the config under steady load drops no request', async () => {
  const gw = await startGateway(mockPolicy('v0'));
  try {
    let stop = false;
    const failures: string[] = [];
    let served = 0;
    const worker = async () => {
      while (!stop) {
        try {
          const res = await fetch(`${gw.url}/x`);
          const text = await res.text();
          if (res.status !== 200 || !/^v\d+$/.test(text)) failures.push(`${res.status} ${text}`);
          served++;
        } catch (err) {
          failures.push(String(err));
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let i = 1; i <= 30; i++) {
      await gw.gateway.apply(parseGatewayConfig(mockPolicy(`v${i}`)), 'admin');
      const target = served + 5;
      await waitFor(() => served >= target, { what: 'traffic between swaps' });
    }
    stop = true;
    await Promise.all(workers);
    assert.deepEqual(failures, []);
    assert.ok(served > 150);
    assert.equal(await body(`${gw.url}/x`), 'v30');
  } finally {
    await gw.stop();
  }
});
