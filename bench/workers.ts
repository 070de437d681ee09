/**
 * `npm run bench:workers`: what `workers: 2` costs per request against
 * `workers: 1` (docs/workers.md). This machine has too few cores to show
 * scaling in requests/s, so the figure is CPU time: the utime+stime of the
 * gateway's whole process tree (primary and workers, from /proc) over a fixed
 * number of requests, divided by that number. Scenarios: a mocked answer, a
 * proxied one, and a local limit-count in front of a mocked answer (with
 * workers the admissions are leased from the primary; this is its price).
 * The primary's own share is printed per round (stderr).
 *
 * Environment: WORKERS_BENCH_REQUESTS (per run, default 20000),
 * WORKERS_BENCH_ROUNDS (default 3), WORKERS_BENCH_CONNECTIONS (default 20).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { clockTicks, parseProcStat, treeCpuSeconds } from './measure.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const requests = Number(process.env.WORKERS_BENCH_REQUESTS ?? 20_000);
const rounds = Number(process.env.WORKERS_BENCH_ROUNDS ?? 3);
const connections = Number(process.env.WORKERS_BENCH_CONNECTIONS ?? 20);
const scenarios = (process.env.WORKERS_BENCH_SCENARIOS?.split(',') ?? [
  'hello',
  'proxy',
  'limit-count',
]) as readonly string[];

function gatewayYaml(originPort: number): string {
  const mock = `{ id: m, type: mocking, config: { response_status: 200, content_type: application/json, response_example: '{"hello":"world"}' } }`;
  return `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
  - { name: proxy, match: { path: /proxy }, policy: proxy }
  - { name: limit-count, match: { path: /limit-count }, policy: limited }
policies:
  - name: hello
    nodes: [{ id: listener, type: listener }, ${mock}, { id: client, type: client }]
    edges: [{ from: listener.out, to: m.in }, { from: m.success, to: client.in }]
  - name: proxy
    nodes:
      - { id: listener, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${originPort} }] } }
      - { id: client, type: client }
    edges: [{ from: listener.out, to: up.in }, { from: up.success, to: client.in }]
  - name: limited
    nodes:
      - { id: listener, type: listener }
      - { id: lc, type: limit-count, config: { count: 1000000000, time_window: 3600, key_type: constant, key: all } }
      - ${mock}
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lc.in }
      - { from: lc.success, to: m.in }
      - { from: lc.limited, to: client.in }
      - { from: m.success, to: client.in }
`;
}

/** Resolves with the first line a child prints that matches `pattern`. */
function lineOf(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${String(pattern)}:\n${text}`)),
      timeoutMs,
    );
    child.stdout?.on('data', (d: Buffer) => {
      text += d.toString();
      const match = text.match(pattern);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.once('exit', () => reject(new Error(`exited before ${String(pattern)}:\n${text}`)));
  });
}

async function startGateway(
  workers: number,
  originPort: number,
): Promise<{ pid: number; url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-workers-'));
  writeFileSync(join(dir, 'gateway.yaml'), gatewayYaml(originPort));
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(
    join(dir, 'system.yaml'),
    `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: info }\nworkers: ${workers}\n`,
  );
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin/switchyard.js'),
      '--system-config',
      join(dir, 'system.yaml'),
      '--gateway-config',
      join(dir, 'gateway.yaml'),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_FORMAT: 'json' } },
  );
  // workers: 1 logs "data plane listening" once; the primary logs this after every worker listens.
  await lineOf(
    child,
    workers === 1 ? /data plane listening/ : /worker processes serve the data plane/,
    120_000,
  );
  child.stdout?.resume();
  return {
    pid: child.pid as number,
    url: `http://127.0.0.1:${port}`,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the gateway's processes are idle (under 20 ms of CPU in 500 ms):
 * workers finish their startup work (imports, JIT, GC) after they listen, and
 * that must not be billed to the first scenario. Gives up after 30 s.
 */
async function settle(pid: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const before = treeCpuSeconds(pid) ?? 0;
    await delay(500);
    if ((treeCpuSeconds(pid) ?? 0) - before < 0.02) return;
  }
}

/** CPU seconds of `pid` alone (the primary, without its workers). */
function ownCpuSeconds(pid: number): number {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).own / clockTicks;
  } catch {
    return 0;
  }
}

/** `amount` requests by autocannon in its own process (its CPU is not the gateway's). */
async function drive(
  url: string,
  amount: number,
): Promise<{ rps: number; non2xx: number; errors: number; codes: unknown }> {
  const script = `import ac from 'autocannon';const r=await ac({url:${JSON.stringify(url)},connections:${connections},amount:${amount},timeout:30});process.stdout.write(JSON.stringify({rps:r.requests.average,non2xx:r.non2xx,errors:r.errors,codes:r.statusCodeStats}))`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
  await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return JSON.parse(out) as { rps: number; non2xx: number; errors: number; codes: unknown };
}

async function main(): Promise<void> {
  const origin: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/origin.ts')], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const originPort = Number((await lineOf(origin, /listening (\d+)/, 30_000))[1]);
  const cpu = new Map<string, number[]>();
  const rps = new Map<string, number[]>();
  const ratios = new Map<string, number[]>();
  // Both gateways run side by side and each scenario is measured on one right after the other,
  // so the two see the same background load (this machine is shared); the ratio is taken per pair.
  const gateways = [await startGateway(1, originPort), await startGateway(2, originPort)] as const;
  try {
    for (const gw of gateways)
      for (const scenario of scenarios) await drive(`${gw.url}/${scenario}`, Math.min(3000, requests));
    for (let round = 1; round <= rounds; round++) {
      for (const scenario of scenarios) {
        const pair: number[] = [];
        for (const [i, gw] of gateways.entries()) {
          const workers = i + 1;
          await settle(gw.pid);
          const before = treeCpuSeconds(gw.pid) ?? 0;
          const ownBefore = ownCpuSeconds(gw.pid);
          const result = await drive(`${gw.url}/${scenario}`, requests);
          const after = treeCpuSeconds(gw.pid) ?? 0;
          const own = ((ownCpuSeconds(gw.pid) - ownBefore) * 1e6) / requests;
          if (result.non2xx > 0 || result.errors > 0)
            throw new Error(
              `${scenario} workers=${workers}: ${result.non2xx} non-2xx, ${result.errors} errors ${JSON.stringify(result.codes)}`,
            );
          const perRequest = ((after - before) * 1e6) / requests;
          pair.push(perRequest);
          const key = `${scenario}:${workers}`;
          cpu.set(key, [...(cpu.get(key) ?? []), perRequest]);
          rps.set(key, [...(rps.get(key) ?? []), result.rps]);
          process.stderr.write(
            `round ${round} workers=${workers} ${scenario}: ${perRequest.toFixed(1)} µs/request` +
              (workers > 1 ? ` (primary ${own.toFixed(1)})` : '') +
              ` ${result.rps.toFixed(0)} rps\n`,
          );
        }
        ratios.set(scenario, [...(ratios.get(scenario) ?? []), (pair[1] ?? NaN) / (pair[0] ?? NaN)]);
      }
    }
  } finally {
    await Promise.all(gateways.map((gw) => gw.stop()));
    origin.kill('SIGTERM');
  }
  const median = (values: number[] = []): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? NaN;
  };
  const lines = [
    `CPU per request, all gateway processes (median of ${rounds} rounds × ${requests} requests, ${connections} connections)`,
    '',
    '| scenario | workers: 1 µs/req | workers: 2 µs/req | ratio (median of pairs) | per-round ratios | rps w1 / w2 |',
    '|---|---|---|---|---|---|',
  ];
  for (const scenario of scenarios) {
    const one = median(cpu.get(`${scenario}:1`));
    const two = median(cpu.get(`${scenario}:2`));
    const r1 = median(rps.get(`${scenario}:1`));
    const r2 = median(rps.get(`${scenario}:2`));
    lines.push(
      `| ${scenario} | ${one.toFixed(1)} | ${two.toFixed(1)} | ${median(ratios.get(scenario)).toFixed(2)}× | ${(ratios.get(scenario) ?? []).map((r) => r.toFixed(2)).join(', ')} | ${r1.toFixed(0)} / ${r2.toFixed(0)} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
