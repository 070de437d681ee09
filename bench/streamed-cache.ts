/**
 * `npm run bench:streamed-cache`: what caching a streamed response costs and saves
 * (docs/benchmarks.md#streamed-cache). A slow origin sends BODY_MIB MiB in 64 KiB chunks over
 * about ORIGIN_MS; the gateway caches it with a lookup/store pair, once with the upstream
 * streaming (the default) and once forced to buffer (a file-logger without log_format after the
 * store half, which reads the body).
 * For each: time to the first byte and to the last on the MISS, the HIT, and the gateway's RSS
 * growth. ROUNDS (default 3) medians.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeProcess, treeRssMiB, gatewayArgv } from './measure.js';

const BODY_MIB = Number(process.env.BODY_MIB ?? 16);
const ORIGIN_MS = Number(process.env.ORIGIN_MS ?? 800);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CHUNK = Buffer.alloc(64 * 1024, 'x');
const CHUNKS = (BODY_MIB * 1024 * 1024) / CHUNK.length;
const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function slowOrigin(): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let sent = 0;
    const pause = ORIGIN_MS / CHUNKS;
    const next = () => {
      if (sent === CHUNKS) return void res.end();
      sent++;
      res.write(CHUNK);
      setTimeout(next, pause);
    };
    next();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Milliseconds to the first body byte and to the end, and the cache status. */
function timedGet(url: string): Promise<{ firstMs: number; lastMs: number; status: string; bytes: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let first = 0;
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        if (bytes === 0) first = performance.now() - started;
        bytes += c.length;
      });
      res.on('end', () =>
        resolve({
          firstMs: first,
          lastMs: performance.now() - started,
          status: String(res.headers['switchyard-cache-status']),
          bytes,
        }),
      );
    })
      .on('error', reject)
      .end();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const origin = await slowOrigin();
  const port = (origin.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-streamed-cache-'));
  const rows: string[] = [];
  try {
    for (const mode of ['streamed', 'buffered'] as const) {
      const buffered = mode === 'buffered';
      const logPath = join(dir, 'access.ndjson');
      const cap = BODY_MIB * 2 * 1024 * 1024;
      writeFileSync(
        join(dir, 'system.yaml'),
        'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n',
      );
      // Every round caches under its own key (the path), so each MISS is a real miss.
      writeFileSync(
        join(dir, 'gateway.yaml'),
        `routes:\n  - { name: files, match: { path: /* }, policy: p }\npolicies:\n  - name: p\n    nodes:\n` +
          `      - { id: in, type: listener }\n` +
          `      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: f } }\n` +
          `      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }\n` +
          `      - { id: store, type: proxy-cache, config: { phase: store, id: f, max_object_bytes: ${cap} } }\n` +
          (buffered ? `      - { id: log, type: file-logger, config: { path: ${logPath} } }\n` : '') +
          `      - { id: out, type: client }\n    edges:\n` +
          `      - { from: in.out, to: lookup.in }\n      - { from: lookup.success, to: up.in }\n` +
          `      - { from: lookup.hit, to: out.in }\n      - { from: up.success, to: store.in }\n` +
          (buffered
            ? `      - { from: store.success, to: log.in }\n      - { from: log.success, to: out.in }\n`
            : `      - { from: store.success, to: out.in }\n`) +
          `      - { from: store.hit, to: out.in }\n`,
      );
      const gateway = await startNodeProcess(gatewayArgv(dir), { LOG_LEVEL: 'info' }, null, children);
      const base = `http://127.0.0.1:${gateway.port}`;
      const rssBefore = treeRssMiB(gateway.pid) ?? NaN;
      const miss = { first: [] as number[], last: [] as number[] };
      const hit: number[] = [];
      let peak = rssBefore;
      for (let i = 0; i < ROUNDS; i++) {
        const m = await timedGet(`${base}/file-${i}`);
        if (m.status !== 'MISS' || m.bytes !== BODY_MIB * 1024 * 1024)
          throw new Error(`bad miss ${JSON.stringify(m)}`);
        peak = Math.max(peak, treeRssMiB(gateway.pid) ?? 0);
        miss.first.push(m.firstMs);
        miss.last.push(m.lastMs);
        const h = await timedGet(`${base}/file-${i}`);
        if (h.status !== 'HIT') throw new Error(`expected a HIT, got ${h.status}`);
        hit.push(h.lastMs);
      }
      rows.push(
        `| ${mode} | ${median(miss.first).toFixed(1)} | ${median(miss.last).toFixed(0)} | ${median(hit).toFixed(1)} | ${(peak - rssBefore).toFixed(1)} |`,
      );
      children.pop()?.kill('SIGTERM');
    }
  } finally {
    origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `streamed-cache: ${BODY_MIB} MiB over ~${ORIGIN_MS} ms from the origin, ${ROUNDS} rounds (medians), node ${process.version}\n\n` +
      `| upstream | MISS first byte ms | MISS last byte ms | HIT ms | gateway RSS growth MiB |\n|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
  process.exit(0);
}

void main();
