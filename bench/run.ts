/**
 * `npm run bench`: the gateway against two peers, in one run, on the same
 * origin and the same load, interleaved over several rounds:
 *
 * - `minimal`: bench/minimal-proxy.ts, node:http + undici `Pool.dispatch`
 *   straight into the response — the leanest correct Node.js proxy;
 * - `fastify`: bench/fastify-proxy.ts, fastify + @fastify/http-proxy.
 *
 * Each target process is pinned to one CPU when `taskset` exists (origin,
 * load generator and this runner on the others). Prints requests/s, p50, p99,
 * CPU µs per request (the target's /proc utime+stime over the run ÷ requests),
 * resident memory after the run, and each row's requests/s as a ratio to
 * each peer's on the same body.
 *
 * Environment: BENCH_SECONDS (per run, default 5), BENCH_ROUNDS (default 3),
 * BENCH_CONNECTIONS (default 50), BENCH_SCENARIOS (comma list of scenario
 * names, default all; `grpc-unary`, bench/grpc.ts, and `ai-stream`,
 * bench/ai-stream.ts, run only when listed; the latter reads BENCH_AI_STREAMS,
 * BENCH_AI_TOKENS and BENCH_AI_TOKEN_INTERVAL_MS),
 * BENCH_PEERS (comma list, default `minimal,fastify`),
 * BENCH_PIN=0 (no pinning).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '../test/support/redis.js';
import {
  has,
  load,
  parseCpuList,
  pinSelf,
  planPinning,
  treeCpuSeconds,
  treeRssMiB,
  type Sample,
  startNodeProcess,
} from './measure.js';
import { peerPath, scenarios, type Payload } from './scenarios.js';
import { GRPC_SCENARIO, grpcTableRows, runGrpcBench } from './grpc.js';
import { AI_STREAM_SCENARIO, aiStreamTableRows, runAiStreamBench } from './ai-stream.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const split = (value: string | undefined) => value?.split(',').map((s) => s.trim());
const only = split(process.env.BENCH_SCENARIOS);

const peers = [
  {
    id: 'minimal',
    title: 'minimal proxy: node:http + undici Pool.dispatch',
    script: 'bench/minimal-proxy.ts',
  },
  { id: 'fastify', title: 'fastify 5 + @fastify/http-proxy', script: 'bench/fastify-proxy.ts' },
] as const;
type PeerId = (typeof peers)[number]['id'];
const wantedPeers = split(process.env.BENCH_PEERS) ?? peers.map((p) => p.id);

const payloadLabel: Record<Payload, string> = { hello: '42 B', '16k': '16 KiB' };

interface Target {
  name: string;
  payload: Payload;
  url: string;
  headers: Record<string, string>;
  http2: boolean;
  pid: number;
  peer?: PeerId;
}

interface Result extends Sample {
  cpuUs: number | null;
  /** Resident memory right after the run. */
  rssMiB: number | null;
}

const children: ChildProcess[] = [];
let workDir: string | undefined;
process.on('exit', () => {
  children.forEach((c) => c.kill('SIGKILL'));
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});
// Interrupted: exit through 'exit' above, so no pinned target outlives the run.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const startProcess = (args: string[], env: NodeJS.ProcessEnv, cpu: string | null) =>
  startNodeProcess(args, env, cpu, children);

/** A throwaway self-signed certificate for the TLS scenarios. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'bench.crt');
  const key = join(dir, 'bench.key');
  const result = spawnSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  if (result.status !== 0) throw new Error(`openssl failed: ${result.stderr.toString()}`);
  return { cert, key };
}

/** A Markdown table, columns padded so it also reads in a terminal. */
function markdownTable(rows: Record<string, string>[]): string {
  const columns = Object.keys(rows[0] ?? {});
  const width = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(width[i] ?? 0)).join(' | ')} |`;
  return [
    line(columns),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(columns.map((c) => r[c] ?? ''))),
  ].join('\n');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** One measured run: the load, and the target's CPU time over it. */
async function measure(target: Target, threads: number): Promise<Result> {
  const before = treeCpuSeconds(target.pid);
  const sample = await load(
    { url: target.url, headers: target.headers, http2: target.http2, seconds, connections, threads },
    (generator) => {
      children.push(generator);
      generator.once('exit', () => {
        const at = children.indexOf(generator);
        if (at >= 0) children.splice(at, 1);
      });
    },
  );
  const after = treeCpuSeconds(target.pid);
  const cpuUs =
    before === null || after === null || sample.requests === 0
      ? null
      : ((after - before) * 1e6) / sample.requests;
  return { ...sample, cpuUs, rssMiB: treeRssMiB(target.pid) };
}

async function main(): Promise<void> {
  const pinning = planPinning(process.env.BENCH_PIN === '0');
  // Everything started from here on (origin, redis, wrk) inherits the non-target CPUs.
  if (pinning.rest !== null) pinSelf(pinning.rest);
  const loadCpus = pinning.rest === null ? cpus().length : parseCpuList(pinning.rest).length;
  const threads = Math.max(1, Math.min(2, loadCpus));
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  workDir = dir;
  let redis: RedisServer | undefined;
  try {
    const origin = await startProcess(['--import', 'tsx', 'bench/origin.ts'], {}, null);
    const selected = scenarios.filter(
      (s) => (only === undefined || only.includes(s.name)) && (s.http2 !== true || has('h2load')),
    );
    const skipped = scenarios.filter((s) => s.http2 === true && !has('h2load')).map((s) => s.name);
    if (skipped.length > 0)
      console.log(`skipping ${skipped.join(', ')}: h2load (nghttp2-client) is not installed`);
    // gRPC unary (bench/grpc.ts): opt-in, BENCH_SCENARIOS=grpc-unary (alone, or with HTTP scenarios).
    let grpcTable: string | undefined;
    if (only?.includes(GRPC_SCENARIO) === true) {
      const rows = await runGrpcBench({
        seconds,
        rounds,
        concurrency: connections,
        targetCpu: pinning.target,
        dir,
        children,
      });
      grpcTable = markdownTable(grpcTableRows(rows));
      if (selected.length === 0 && !only.includes(AI_STREAM_SCENARIO)) {
        console.log(
          `\nSwitchyard gRPC benchmark — ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ` +
            `${cpus().length} CPUs, ${rounds} rounds × ${seconds}s interleaved, ${connections} calls in flight on one ` +
            `@grpc/grpc-js channel; medians\n${pinning.describe}\n× direct = this row’s calls/s ÷ the direct call’s\n`,
        );
        console.log(grpcTable);
        return;
      }
    }
    // AI streaming (bench/ai-stream.ts): opt-in, BENCH_SCENARIOS=ai-stream.
    let aiTable: string | undefined;
    if (only?.includes(AI_STREAM_SCENARIO) === true) {
      const streams = Number(process.env.BENCH_AI_STREAMS ?? 16);
      const tokens = Number(process.env.BENCH_AI_TOKENS ?? 64);
      const intervalMs = Number(process.env.BENCH_AI_TOKEN_INTERVAL_MS ?? 1);
      const rows = await runAiStreamBench({
        seconds,
        rounds,
        streams,
        tokens,
        intervalMs,
        targetCpu: pinning.target,
        dir,
        children,
      });
      aiTable =
        `AI streaming (${streams} streams in flight, ${tokens} tokens each, ${intervalMs} ms apart; ` +
        `TTFT added = p50 − direct p50; × provider CPU = CPU per token ÷ the provider's own)\n\n` +
        markdownTable(aiStreamTableRows(rows));
    }
    if ((grpcTable !== undefined || aiTable !== undefined) && selected.length === 0) {
      console.log(
        `\nSwitchyard benchmark — ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ` +
          `${cpus().length} CPUs, ${rounds} rounds × ${seconds}s interleaved; medians\n${pinning.describe}\n`,
      );
      if (grpcTable !== undefined) console.log(`gRPC unary\n\n${grpcTable}\n`);
      if (aiTable !== undefined) console.log(aiTable);
      if (seconds < 5 || rounds < 3)
        console.log(
          '\nShort settings (under 3 rounds × 5 s): a smoke run of the harness, not a result to publish.',
        );
      return;
    }
    const payloads = [...new Set(selected.map((s) => s.payload ?? 'hello'))];
    if (payloads.length === 0) payloads.push('hello');

    const targets: Target[] = [];
    for (const peer of peers.filter((p) => wantedPeers.includes(p.id))) {
      const started = await startProcess(
        ['--import', 'tsx', peer.script],
        { UPSTREAM_PORT: String(origin.port) },
        pinning.target,
      );
      for (const payload of payloads) {
        targets.push({
          name: peer.title,
          payload,
          url: `http://127.0.0.1:${started.port}${peerPath[payload]}`,
          headers: {},
          http2: false,
          pid: started.pid,
          peer: peer.id,
        });
      }
    }
    // Only a scenario that counts in a store pays for a redis-server.
    if (selected.some((s) => s.needsRedis === true)) redis = await startRedis();
    let tlsFiles: { cert: string; key: string } | undefined;
    if (selected.some((s) => s.tls === true)) tlsFiles = selfSigned(dir);
    for (const scenario of selected) {
      const system = join(dir, `${scenario.name}-system.yaml`);
      const gateway = join(dir, `${scenario.name}-gateway.yaml`);
      const tls =
        scenario.tls === true && tlsFiles !== undefined
          ? `tls: { cert_path: ${tlsFiles.cert}, key_path: ${tlsFiles.key} }\n`
          : '';
      writeFileSync(
        system,
        `listener: { bind: 127.0.0.1, port: 0${scenario.listener === undefined ? '' : `, ${scenario.listener}`} }\n` +
          `logging: { level: info, format: json }\n${tls}${scenario.systemYaml ?? ''}`,
      );
      writeFileSync(gateway, scenario.gatewayYaml(origin.port, redis?.url));
      const gw = await startProcess(
        ['bin/switchyard.js', '--system-config', system, '--gateway-config', gateway],
        { LOG_LEVEL: 'info' },
        pinning.target,
      );
      const scheme = scenario.tls === true ? 'https' : 'http';
      targets.push({
        name: scenario.title,
        payload: scenario.payload ?? 'hello',
        url: `${scheme}://127.0.0.1:${gw.port}${scenario.path}`,
        headers: scenario.headers ?? {},
        http2: scenario.http2 === true,
        pid: gw.pid,
      });
    }

    // Warm-up so the JIT and keep-alive pools are hot before anything is measured.
    for (const t of targets) await measure(t, threads);
    const results = new Map<Target, Result[]>(targets.map((t) => [t, []]));
    for (let round = 0; round < rounds; round++) {
      // Rotate the order each round so no target always runs first (or right after the same one).
      for (let i = 0; i < targets.length; i++) {
        const t = targets[(i + round) % targets.length]!;
        results.get(t)?.push(await measure(t, threads));
      }
    }

    const medians = new Map<Target, Result>();
    for (const [t, rs] of results) {
      const cpu = rs.flatMap((r) => (r.cpuUs === null ? [] : [r.cpuUs]));
      const rss = rs.flatMap((r) => (r.rssMiB === null ? [] : [r.rssMiB]));
      medians.set(t, {
        rps: median(rs.map((r) => r.rps)),
        p50: median(rs.map((r) => r.p50)),
        p99: median(rs.map((r) => r.p99)),
        requests: median(rs.map((r) => r.requests)),
        cpuUs: cpu.length === 0 ? null : median(cpu),
        rssMiB: rss.length === 0 ? null : median(rss),
      });
    }
    const peerRps = (peer: PeerId, payload: Payload) => {
      const t = targets.find((x) => x.peer === peer && x.payload === payload);
      return t === undefined ? undefined : medians.get(t)?.rps;
    };
    const ratio = (rps: number, base: number | undefined) =>
      base === undefined || base === 0 ? '—' : `${(rps / base).toFixed(2)}×`;
    const rows = targets.map((t) => {
      const m = medians.get(t)!;
      return {
        target: t.name,
        body: payloadLabel[t.payload],
        'req/s': String(Math.round(m.rps)),
        'p50 ms': m.p50.toFixed(2),
        'p99 ms': m.p99.toFixed(2),
        'CPU µs/req': m.cpuUs === null ? '—' : m.cpuUs.toFixed(1),
        'RSS MiB': m.rssMiB === null ? '—' : m.rssMiB.toFixed(0),
        '× minimal': ratio(m.rps, peerRps('minimal', t.payload)),
        '× fastify': ratio(m.rps, peerRps('fastify', t.payload)),
      };
    });
    console.log(
      `\nSwitchyard benchmark — ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ` +
        `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ${rounds} rounds × ${seconds}s interleaved, ` +
        `${connections} connections, load by ${has('wrk') ? `wrk (${threads} thread${threads > 1 ? 's' : ''})` : 'autocannon'}; medians`,
    );
    console.log(pinning.describe);
    console.log(
      '× peer = this row’s req/s ÷ that peer’s req/s on the same body (TLS and HTTP/2 rows against the plain HTTP/1.1 peers)\n',
    );
    console.log(markdownTable(rows));
    if (grpcTable !== undefined)
      console.log(
        `\ngRPC unary (${connections} calls in flight; × direct = calls/s ÷ the direct call’s)\n\n${grpcTable}`,
      );
    if (aiTable !== undefined) console.log(`\n${aiTable}`);
    if (seconds < 5 || rounds < 3)
      console.log(
        '\nShort settings (under 3 rounds × 5 s): a smoke run of the harness, not a result to publish.',
      );
  } finally {
    children.forEach((c) => c.kill('SIGTERM'));
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
