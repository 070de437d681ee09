/**
 * The gRPC unary scenario of `npm run bench` (opt-in: BENCH_SCENARIOS lists
 * `grpc-unary`; docs/benchmarks.md, "gRPC"). A @grpc/grpc-js origin
 * (bench/grpc-server.ts) is called by a @grpc/grpc-js load script
 * (bench/grpc-load.ts: one channel, a fixed number of calls in flight for a
 * few seconds, loopback) twice per round: directly, and through a gateway
 * whose only policy is listener → upstream (`scheme: grpc`) → client. Reports
 * calls/s, p50, p99, the CPU µs per call of the process in front of the load
 * (the origin for the direct row, the gateway for the other) and the gateway's
 * calls/s as a ratio to the direct call's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeProcess, treeCpuSeconds, treeRssMiB } from './measure.js';

export const GRPC_SCENARIO = 'grpc-unary';

export interface GrpcBenchOptions {
  seconds: number;
  rounds: number;
  /** Calls in flight (the HTTP scenarios' connection count). */
  concurrency: number;
  /** CPU for the gateway (taskset), or null. */
  targetCpu: string | null;
  dir: string;
  children: ChildProcess[];
}

interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export interface GrpcRow {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number | null;
  rssMiB: number | null;
  errors: number;
}

const repo = fileURLToPath(new URL('..', import.meta.url));

function runLoad(
  port: number,
  seconds: number,
  concurrency: number,
  children: ChildProcess[],
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/grpc-load.ts'], {
      cwd: repo,
      env: {
        ...process.env,
        GRPC_TARGET: `127.0.0.1:${port}`,
        GRPC_SECONDS: String(seconds),
        GRPC_CONCURRENCY: String(concurrency),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      const at = children.indexOf(child);
      if (at >= 0) children.splice(at, 1);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || line === '') reject(new Error(`grpc load exited with ${code}: ${out}`));
      else resolve(JSON.parse(line) as LoadResult);
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Runs the scenario; resolves to its two rows (direct, through the gateway). */
export async function runGrpcBench(o: GrpcBenchOptions): Promise<GrpcRow[]> {
  const origin = await startNodeProcess(['--import', 'tsx', 'bench/grpc-server.ts'], {}, null, o.children);
  const system = join(o.dir, 'grpc-system.yaml');
  const gateway = join(o.dir, 'grpc-gateway.yaml');
  writeFileSync(system, 'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n');
  writeFileSync(
    gateway,
    `
routes:
  - { name: bench, match: { path: /bench.Echo/* }, policy: grpc }
policies:
  - name: grpc
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { scheme: grpc, targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`,
  );
  const gw = await startNodeProcess(
    ['bin/switchyard.js', '--system-config', system, '--gateway-config', gateway],
    { LOG_LEVEL: 'info' },
    o.targetCpu,
    o.children,
  );
  const targets = [
    { target: 'direct: @grpc/grpc-js client → server', port: origin.port, pid: origin.pid },
    { target: 'switchyard: listener → upstream (scheme: grpc) → client', port: gw.port, pid: gw.pid },
  ];
  const measure = async (t: (typeof targets)[number]) => {
    const before = treeCpuSeconds(t.pid);
    const r = await runLoad(t.port, o.seconds, o.concurrency, o.children);
    const after = treeCpuSeconds(t.pid);
    const cpuUs =
      before === null || after === null || r.requests === 0 ? null : ((after - before) * 1e6) / r.requests;
    return { ...r, cpuUs, rssMiB: treeRssMiB(t.pid) };
  };
  // Warm-up (JIT, the gateway's HTTP/2 session to the origin), then interleaved rounds.
  for (const t of targets) await runLoad(t.port, Math.min(2, o.seconds), o.concurrency, o.children);
  const results = targets.map(() => [] as Awaited<ReturnType<typeof measure>>[]);
  for (let round = 0; round < o.rounds; round++) {
    for (let i = 0; i < targets.length; i++) {
      const k = (i + round) % targets.length;
      results[k]!.push(await measure(targets[k]!));
    }
  }
  return targets.map((t, k) => {
    const rs = results[k]!;
    const cpu = rs.flatMap((r) => (r.cpuUs === null ? [] : [r.cpuUs]));
    const rss = rs.flatMap((r) => (r.rssMiB === null ? [] : [r.rssMiB]));
    return {
      target: t.target,
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: cpu.length === 0 ? null : median(cpu),
      rssMiB: rss.length === 0 ? null : median(rss),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  });
}

/** The rows as table cells; `× direct` is each row's calls/s over the direct call's. */
export function grpcTableRows(rows: GrpcRow[]): Record<string, string>[] {
  const direct = rows[0]?.rps ?? 0;
  return rows.map((r) => ({
    target: r.target,
    'calls/s': String(Math.round(r.rps)),
    'p50 ms': r.p50.toFixed(2),
    'p99 ms': r.p99.toFixed(2),
    'CPU µs/call': r.cpuUs === null ? '—' : r.cpuUs.toFixed(1),
    'RSS MiB': r.rssMiB === null ? '—' : r.rssMiB.toFixed(0),
    '× direct': direct === 0 ? '—' : `${(r.rps / direct).toFixed(2)}×`,
    errors: String(r.errors),
  }));
}
