/**
 * examples/grpc runs as written (examples/README.md, "grpc"): the stand-in
 * backend, the gateway with examples/grpc/gateway.yaml and
 * examples/grpc/client.mjs, whose printed outcomes are checked. The second
 * target is a port nothing listens on, so calls that pick it first show the
 * retry on the other one.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../support/free-port.js';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const dir = tempDir('switchyard-grpc-example-');
let backend: ChildProcess;
let gateway: GatewayProcess;
let gatewayPort: number;

before(async () => {
  const backendPort = await freePort();
  backend = spawn(process.execPath, [join(repo, 'examples/backend/server.mjs')], {
    env: { ...process.env, BACKEND_PORTS: String(backendPort) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  backend.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes('listening'), { timeoutMs: 10_000, what: 'the example backend' });

  gatewayPort = await freePort();
  const system = join(dir.path, 'system.yaml');
  writeFileSync(
    system,
    `listener: { bind: 127.0.0.1, port: ${gatewayPort} }\nlogging: { level: warn }\ntimeouts: { shutdown_timeout_seconds: 2 }\n`,
  );
  gateway = spawnGateway(
    ['--system-config', system, '--gateway-config', join(repo, 'examples/grpc/gateway.yaml')],
    { UPSTREAM_PORT: String(backendPort), CANARY_PORT: String(await freePort()) },
  );
  await waitFor(
    async () => {
      try {
        await fetch(`http://127.0.0.1:${gatewayPort}/`);
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs: 60_000, intervalMs: 100, what: 'the gateway to listen' },
  );
});

after(async () => {
  await gateway?.stop();
  backend?.kill();
  dir.remove();
});

test('examples/grpc: client.mjs gets answers, UNAUTHENTICATED without the key, and every call survives the dead target', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(repo, 'examples/grpc/client.mjs')], {
    env: { ...process.env, GATEWAY: `127.0.0.1:${gatewayPort}` },
    timeout: 60_000,
  });
  const lines = stdout.trim().split('\n');
  assert.deepEqual(
    lines.map((l) => l.replace(/\s+/g, ' ')),
    [
      'SayHello with the key: OK: hello ada',
      'SayHello without the key: UNAUTHENTICATED (16): Invalid or missing API key',
      'SayHello with an empty name: INVALID_ARGUMENT (3): name is required',
      'SayHelloStream: OK: hello bob #1 | hello bob #2 | hello bob #3',
      'SayHello, 2 s deadline: OK: hello cy',
    ],
    `${stdout}\n${gateway.output()}`,
  );
});
