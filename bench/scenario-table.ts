/**
 * `npm run bench:scenarios`: the scenario table (issue 36 item 1), an opt-in group beside
 * `npm run bench` so the default run stays short. Each scenario of bench/table-scenarios.ts
 * runs on its own gateway process; nginx (one process, natively configured, a server per
 * scenario it can do), the minimal Node proxy (plain and TLS) and fastify-proxy run the
 * scenarios they can, in the same run, on the same origin (bench/scenario-origin.ts).
 *
 * 1. Every target is probed first (bench/table-scenarios.ts): a failing probe fails its
 *    scenario loudly (not measured, FAILED in the table, exit code 1).
 * 2. Saturation: wrk (bench/measure.ts `load`), BENCH_ROUNDS interleaved rounds in a rotated
 *    order, medians; CPU µs per request from the target's /proc times.
 * 3. Fixed rate: the highest rate held with p99 ≤ BENCH_P99_MS (10), by bisection between 0
 *    and the saturation rate, BENCH_RATE_STEPS (4) steps of BENCH_RATE_SECONDS (3) each, the
 *    targets interleaved per step; the load is bench/fixed-rate.ts (open loop, latency from
 *    each request's due time), in this process.
 *
 * Targets are pinned to one CPU as `npm run bench` does (planPinning). Environment:
 * BENCH_SECONDS (3), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), BENCH_SCENARIOS (comma list,
 * default all), BENCH_PEERS (`nginx,minimal,fastify`), BENCH_PIN=0, BENCH_RATE_SECONDS,
 * BENCH_RATE_STEPS, BENCH_P99_MS. See docs/benchmarks.md#scenario-table.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuthority } from '../test/support/certs.js';
import { freePort } from '../test/support/free-port.js';
import { startRedis, type RedisServer } from '../test/support/redis.js';
import { fixedRate, type FixedRateResult } from './fixed-rate.js';
import {
  gatewayArgv,
  has,
  load,
  parseCpuList,
  pinSelf,
  planPinning,
  startNodeProcess,
  treeCpuSeconds,
} from './measure.js';
import { nginxConfig, tableScenarios, type Peer, type TableScenario } from './table-scenarios.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const seconds = env('BENCH_SECONDS', 3);
const rounds = env('BENCH_ROUNDS', 3);
const connections = env('BENCH_CONNECTIONS', 50);
const rateSeconds = env('BENCH_RATE_SECONDS', 3);
const rateSteps = env('BENCH_RATE_STEPS', 4);
const p99Limit = env('BENCH_P99_MS', 10);
const split = (value: string | undefined) => value?.split(',').map((s) => s.trim());
const only = split(process.env.BENCH_SCENARIOS);
const wantedPeers = split(process.env.BENCH_PEERS) ?? ['nginx', 'minimal', 'fastify'];

interface Target {
  scenario: TableScenario;
  peer: Peer;
  url: string;
  pid: number;
  probe?: string;
  failed?: string;
  sat: { rps: number; p99: number; cpuUs: number | null }[];
  /** Bisection bounds of the fixed-rate search, and the best step held. */
  lo: number;
  hi: number;
  held?: FixedRateResult;
}

const children: ChildProcess[] = [];
let workDir: string | undefined;
process.on('exit', () => {
  children.forEach((c) => c.kill('SIGKILL'));
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

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

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** nginx in the foreground (pinned), serving `servers`; resolves with its master's pid once every port accepts. */
async function startNginx(dir: string, conf: string, ports: number[], cpu: string | null): Promise<number> {
  const path = join(dir, 'nginx.conf');
  writeFileSync(path, conf);
  const argv = ['-p', dir, '-e', 'stderr', '-c', path];
  const child =
    cpu === null
      ? spawn('nginx', argv, { stdio: ['ignore', 'inherit', 'inherit'] })
      : spawn('taskset', ['-c', cpu, 'nginx', ...argv], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(child);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
    if ((await Promise.all(ports.map(accepts))).every(Boolean)) return child.pid!;
    if (Date.now() > deadline) throw new Error('nginx did not listen within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const requestHeaders = (t: Target) => ({
  ...(t.scenario.headers ?? {}),
  ...(t.scenario.newConnection === true ? { connection: 'close' } : {}),
});

async function saturate(t: Target, threads: number, runSeconds: number) {
  const before = treeCpuSeconds(t.pid);
  const sample = await load(
    { url: t.url, headers: requestHeaders(t), http2: false, seconds: runSeconds, connections, threads },
    (generator) => children.push(generator),
  );
  const after = treeCpuSeconds(t.pid);
  const cpuUs =
    before === null || after === null || sample.requests === 0
      ? null
      : ((after - before) * 1e6) / sample.requests;
  return { rps: sample.rps, p99: sample.p99, cpuUs };
}

/** One bisection step of the fixed-rate search. */
async function rateStep(t: Target): Promise<void> {
  const rate = Math.max(1, Math.round((t.lo + t.hi) / 2));
  const r = await fixedRate({
    url: t.url,
    headers: t.scenario.headers ?? {},
    rate,
    seconds: rateSeconds,
    connections: t.scenario.newConnection === true ? 256 : connections,
    newConnection: t.scenario.newConnection === true,
  });
  const held = r.errors === 0 && r.non2xx === 0 && r.p99 <= p99Limit && r.achieved >= rate * 0.97;
  if (held) {
    t.lo = rate;
    t.held = r;
  } else t.hi = rate;
}

async function main(): Promise<void> {
  const pinning = planPinning(process.env.BENCH_PIN === '0');
  if (pinning.rest !== null) pinSelf(pinning.rest);
  const loadCpus = pinning.rest === null ? cpus().length : parseCpuList(pinning.rest).length;
  const threads = Math.max(1, Math.min(2, loadCpus));
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-scenarios-'));
  workDir = dir;
  const loadBefore = loadavg();
  let redis: RedisServer | undefined;
  try {
    const selected = tableScenarios.filter((s) => only === undefined || only.includes(s.name));
    if (selected.length === 0)
      throw new Error(`BENCH_SCENARIOS names no scenario of ${tableScenarios.map((s) => s.name).join(', ')}`);
    const origin = await startNodeProcess(
      ['--import', 'tsx', 'bench/scenario-origin.ts'],
      {},
      null,
      children,
    );
    if (selected.some((s) => s.needsRedis === true)) redis = await startRedis();
    const certs = createAuthority(dir).issue('bench', {
      cn: 'localhost',
      dns: ['localhost'],
      ips: ['127.0.0.1'],
    });

    const targets: Target[] = [];
    const add = (scenario: TableScenario, peer: Peer, url: string, pid: number) =>
      targets.push({ scenario, peer, url, pid, sat: [], lo: 0, hi: 0 });

    // The gateways: one process per scenario (the tls variants share one), started together.
    const gateways = new Map<string, { pid: number; port: number }>();
    await Promise.all(
      selected
        .filter((s) => s.sharesGatewayOf === undefined || !selected.some((o) => o.name === s.sharesGatewayOf))
        .map(async (s) => {
          const sub = join(dir, s.name);
          mkdirSync(sub);
          const tls = s.tls === true ? `tls: { cert_path: ${certs.cert}, key_path: ${certs.key} }\n` : '';
          writeFileSync(
            join(sub, 'system.yaml'),
            `listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n${tls}`,
          );
          writeFileSync(join(sub, 'gateway.yaml'), s.gatewayYaml(origin.port, redis?.url));
          gateways.set(s.name, await startNodeProcess(gatewayArgv(sub), {}, pinning.target, children));
        }),
    );

    // nginx: one process, a server block per scenario it can do.
    const nginxScenarios =
      wantedPeers.includes('nginx') && has('nginx') ? selected.filter((s) => s.nginx) : [];
    const nginxPorts = new Map<string, number>();
    let nginxPid: number | undefined;
    if (nginxScenarios.length > 0) {
      const servers: string[] = [];
      for (const s of nginxScenarios) {
        const port = await freePort();
        nginxPorts.set(s.name, port);
        servers.push(
          `  server {\n    listen 127.0.0.1:${port}${s.tls === true ? ' ssl' : ''};\n    ${s.nginx!()}\n  }`,
        );
      }
      nginxPid = await startNginx(
        dir,
        nginxConfig(dir, origin.port, servers, certs),
        [...nginxPorts.values()],
        pinning.target,
      );
    }

    // The Node peers, each started once (plain and TLS minimal proxy apart).
    const nodePeer = new Map<string, Promise<{ pid: number; port: number }>>();
    const startPeer = (peer: 'minimal' | 'fastify', tls: boolean) => {
      const key = `${peer}${tls ? '-tls' : ''}`;
      if (!nodePeer.has(key)) {
        const script = peer === 'minimal' ? 'bench/minimal-proxy.ts' : 'bench/fastify-proxy.ts';
        const peerEnv: NodeJS.ProcessEnv = { UPSTREAM_PORT: String(origin.port) };
        if (tls) Object.assign(peerEnv, { TLS_CERT: certs.cert, TLS_KEY: certs.key });
        nodePeer.set(key, startNodeProcess(['--import', 'tsx', script], peerEnv, pinning.target, children));
      }
      return nodePeer.get(key)!;
    };

    for (const s of selected) {
      const scheme = s.tls === true ? 'https' : 'http';
      const gw = gateways.get(s.sharesGatewayOf ?? s.name) ?? gateways.get(s.name);
      if (gw !== undefined) add(s, 'switchyard', `${scheme}://127.0.0.1:${gw.port}${s.path}`, gw.pid);
      const port = nginxPorts.get(s.name);
      if (port !== undefined && nginxPid !== undefined)
        add(s, 'nginx', `${scheme}://127.0.0.1:${port}${s.path}`, nginxPid);
      for (const peer of s.nodePeers ?? []) {
        if (!wantedPeers.includes(peer)) continue;
        const p = await startPeer(peer, s.tls === true);
        add(s, peer, `${scheme}://127.0.0.1:${p.port}${s.path}`, p.pid);
      }
    }

    // 1. Probes: nothing is measured on a target that does not do what its scenario says.
    for (const t of targets) {
      try {
        t.probe = await t.scenario.probe({ peer: t.peer, url: t.url, redisPort: redis?.port });
      } catch (err) {
        t.failed = err instanceof Error ? err.message : String(err);
        console.error(`\n*** PROBE FAILED: ${t.scenario.name} on ${t.peer}: ${t.failed}\n`);
      }
    }
    const measured = targets.filter((t) => t.failed === undefined);

    // 2. Saturation, interleaved; one short warm-up run each first.
    for (const t of measured) await saturate(t, threads, Math.min(2, seconds));
    for (let round = 0; round < rounds; round++)
      for (let i = 0; i < measured.length; i++) {
        const t = measured[(i + round) % measured.length]!;
        try {
          t.sat.push(await saturate(t, threads, seconds));
        } catch (err) {
          t.failed = `saturation run failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
          console.error(`\n*** ${t.scenario.name} on ${t.peer}: ${t.failed}\n`);
        }
      }

    // 3. Fixed rate: bisection between 0 and the saturation rate, the targets interleaved per step.
    for (const t of measured) t.hi = Math.max(10, median(t.sat.map((s) => s.rps)));
    for (let step = 0; step < rateSteps; step++)
      for (const t of measured) if (t.failed === undefined) await rateStep(t);

    const loadAfter = loadavg();
    const satRps = (t: Target) => (t.failed === undefined ? median(t.sat.map((s) => s.rps)) : undefined);
    const find = (scenario: string, peer: Peer) =>
      targets.find((t) => t.scenario.name === scenario && t.peer === peer);
    const ratio = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`;
    const rows = targets.map((t) => {
      const rps = satRps(t);
      const cpu = t.sat.flatMap((s) => (s.cpuUs === null ? [] : [s.cpuUs]));
      const nginx = find(t.scenario.name, 'nginx');
      const vsPeer = (peer: Peer) => {
        const other = find(t.scenario.name, peer);
        return other === undefined || other === t ? '—' : ratio(rps, other && satRps(other));
      };
      const proxy = find('proxy', 'switchyard');
      return {
        scenario: t.scenario.name,
        target: t.peer,
        probe: t.failed === undefined ? 'ok' : 'FAILED',
        'req/s': rps === undefined ? '—' : String(Math.round(rps)),
        'CPU µs/req': cpu.length === 0 ? '—' : median(cpu).toFixed(1),
        'p99 ms': t.sat.length === 0 ? '—' : median(t.sat.map((s) => s.p99)).toFixed(2),
        [`rate at p99≤${p99Limit}ms`]:
          t.failed !== undefined ? '—' : t.held === undefined ? `< ${Math.round(t.hi)}` : String(t.held.rate),
        '× nginx': vsPeer('nginx'),
        'rate × nginx':
          nginx === undefined || nginx === t || nginx.held === undefined || t.held === undefined
            ? '—'
            : ratio(t.held.rate, nginx.held.rate),
        '× minimal': vsPeer('minimal'),
        '× fastify': vsPeer('fastify'),
        '× proxy':
          t.peer !== 'switchyard' || proxy === undefined || proxy === t ? '—' : ratio(rps, satRps(proxy)),
      };
    });
    const fmt = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
    console.log(
      `\nSwitchyard scenario table — ${new Date().toISOString().slice(0, 16)}Z, node ${process.version}, ` +
        `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${fmt(loadBefore)} before, ${fmt(loadAfter)} after`,
    );
    console.log(pinning.describe);
    console.log(
      `saturation: wrk, ${connections} connections, ${rounds} rounds × ${seconds}s interleaved, medians; ` +
        `fixed rate: bench/fixed-rate.ts (open loop, latency from each request's due time), ` +
        `${rateSteps} bisection steps × ${rateSeconds}s, held = no error, p99 ≤ ${p99Limit} ms, ≥ 97 % of the rate answered`,
    );
    console.log(
      '× peer = req/s ÷ that peer’s on the same scenario; × proxy = req/s ÷ switchyard’s proxy row; tls-new-connection sends Connection: close (a handshake per request)\n',
    );
    console.log(markdownTable(rows));
    console.log('\nProbes:');
    for (const t of targets)
      console.log(
        `- ${t.scenario.name} / ${t.peer}: ${t.failed === undefined ? t.probe : `FAILED — ${t.failed}`}`,
      );
    if (targets.some((t) => t.failed !== undefined)) {
      console.error('\nSome scenarios FAILED their probe or their run: see above.');
      process.exitCode = 1;
    }
  } finally {
    children.forEach((c) => c.kill('SIGTERM'));
    await redis?.stop();
  }
}

await main();
