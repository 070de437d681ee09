/**
 * `npm run bench:upload`: a large upload through a 1-node policy (listener → upstream → client),
 * its request body streamed (docs/routing.md#request-bodies; docs/benchmarks.md#uploads).
 * For the lean HTTP/1.1 front, the node:http front and HTTP/2: time to the first byte at the
 * origin, total time, throughput, the gateway's peak RSS growth and its CPU seconds.
 * UPLOAD_MIB (default 1024) sets the size; the body is generated, never stored.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeProcess, treeCpuSeconds, treeRssMiB, gatewayArgv } from './measure.js';

const UPLOAD_MIB = Number(process.env['UPLOAD_MIB'] ?? 1024);
const SIZE = UPLOAD_MIB * 1024 * 1024;
const PIECE = Buffer.alloc(1 << 20, 0x61);
const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

/** The origin: counts the body, notes when its first byte came, answers the count. */
function origin(): { server: Server; firstByteAt: () => number } {
  let first = 0;
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      if (bytes === 0) first = performance.now();
      bytes += c.length;
    });
    req.on('end', () => res.end(String(bytes)));
  });
  return { server, firstByteAt: () => first };
}

/** Writes SIZE bytes as fast as the gateway takes them; resolves with the answer's body. */
async function uploadH1(port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let answer = '';
  socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
  socket.write(`PUT /upload HTTP/1.1\r\nHost: bench\r\nContent-Length: ${SIZE}\r\nConnection: close\r\n\r\n`);
  for (let sent = 0; sent < SIZE; sent += PIECE.length) {
    if (!socket.write(PIECE)) await once(socket, 'drain');
  }
  await once(socket, 'end');
  socket.destroy();
  return answer.slice(answer.indexOf('\r\n\r\n') + 4);
}

async function uploadH2(port: number): Promise<string> {
  const session = h2connect(`http://127.0.0.1:${port}`);
  const stream = session.request({ ':method': 'PUT', ':path': '/upload', 'content-length': String(SIZE) });
  let answer = '';
  stream.on('data', (c: Buffer) => (answer += c.toString()));
  for (let sent = 0; sent < SIZE; sent += PIECE.length) {
    if (!stream.write(PIECE)) await once(stream, 'drain');
  }
  stream.end();
  await once(stream, 'close');
  session.close();
  return answer;
}

async function main(): Promise<void> {
  const o = origin();
  o.server.listen(0, '127.0.0.1');
  await once(o.server, 'listening');
  const port = (o.server.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-upload-'));
  const rows: string[] = [];
  try {
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `routes:\n  - { name: up, match: { path: /* }, policy: p }\npolicies:\n  - name: p\n    nodes:\n` +
        `      - { id: in, type: listener }\n` +
        `      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }\n` +
        `      - { id: out, type: client }\n    edges:\n` +
        `      - { from: in.out, to: up.in }\n      - { from: up.success, to: out.in }\n`,
    );
    const fronts = [
      { name: 'HTTP/1.1, lean front', server: 'lean', upload: uploadH1 },
      { name: 'HTTP/1.1, node:http front', server: 'node', upload: uploadH1 },
      { name: 'HTTP/2 (h2c)', server: 'lean', upload: uploadH2 },
    ];
    for (const front of fronts) {
      writeFileSync(
        join(dir, 'system.yaml'),
        `listener: { bind: 127.0.0.1, port: 0, http1_server: ${front.server}, max_request_body_bytes: ${SIZE * 2} }\n` +
          'http2: { enabled: true }\nlogging: { level: info, format: json }\n',
      );
      const gateway = await startNodeProcess(gatewayArgv(dir), { LOG_LEVEL: 'info' }, null, children);
      // Warm-up (connection pool, JIT), then the baseline.
      await fetch(`http://127.0.0.1:${gateway.port}/warm`, { method: 'POST', body: PIECE });
      const rssBefore = treeRssMiB(gateway.pid) ?? NaN;
      const cpuBefore = treeCpuSeconds(gateway.pid) ?? NaN;
      let peak = rssBefore;
      const sampler = setInterval(() => (peak = Math.max(peak, treeRssMiB(gateway.pid) ?? 0)), 20);
      const started = performance.now();
      const answer = await front.upload(gateway.port);
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      peak = Math.max(peak, treeRssMiB(gateway.pid) ?? 0);
      if (answer.trim() !== String(SIZE)) throw new Error(`${front.name}: origin counted '${answer}'`);
      const cpu = (treeCpuSeconds(gateway.pid) ?? NaN) - cpuBefore;
      rows.push(
        `| ${front.name} | ${(o.firstByteAt() - started).toFixed(1)} | ${seconds.toFixed(1)} | ${(UPLOAD_MIB / seconds).toFixed(0)} | ${(peak - rssBefore).toFixed(1)} | ${cpu.toFixed(1)} |`,
      );
      children.pop()?.kill('SIGTERM');
    }
  } finally {
    o.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `upload: ${UPLOAD_MIB} MiB through listener → upstream → client, node ${process.version}\n\n` +
      '| client → gateway | first byte at origin ms | total s | MiB/s | gateway RSS growth MiB | gateway CPU s |\n' +
      `|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
  process.exit(0);
}

void main();
