/**
 * The load generator of the bench's gRPC scenario (bench/grpc.ts): one
 * @grpc/grpc-js channel to GRPC_TARGET (host:port, h2c), GRPC_CONCURRENCY unary
 * calls in flight for GRPC_SECONDS, then one JSON line on stdout:
 * `{"requests", "rps", "p50", "p99", "errors"}` (latencies in ms).
 */
import * as grpc from '@grpc/grpc-js';
import { UNARY } from './grpc-server.js';

const target = process.env.GRPC_TARGET ?? '127.0.0.1:50051';
const seconds = Number(process.env.GRPC_SECONDS ?? 5);
const concurrency = Number(process.env.GRPC_CONCURRENCY ?? 50);

// field 1 (bytes), 40 bytes: a small message like the HTTP scenarios' 42-byte body.
const payload = Buffer.concat([Buffer.from([0x0a, 40]), Buffer.alloc(40, 0x61)]);
const client = new grpc.Client(target, grpc.credentials.createInsecure());

function call(): Promise<boolean> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(UNARY.path, UNARY.requestSerialize, UNARY.responseDeserialize, payload, (err) =>
      resolve(err === null),
    );
  });
}

await new Promise<void>((resolve, reject) =>
  client.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())),
);
const latencies: number[] = [];
let errors = 0;
const started = performance.now();
const until = started + seconds * 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      if (await call()) latencies.push(performance.now() - t0);
      else errors++;
    }
  }),
);
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
console.log(
  JSON.stringify({
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    errors,
  }),
);
client.close();
