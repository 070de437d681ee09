/**
 * `npm run bench:workers`: what `workers: 2` costs per request against
 * `workers: 1` (docs/workers.md). This machine has too few cores to show
 * scaling in requests/s, so the figure is CPU time: the utime+stime of the
 * gateway's whole process tree (primary and workers, from /proc) over a fixed
 * number of requests, divided by that number. Scenarios: a mocked answer, a
 * proxied one, and a local limit-count in front of a mocked answer (with
 * workers the admissions are leased from the primary; this is its price).
 * Each round measures workers: 1 and workers: 2 back to back (alternating which goes first), then
 * workers: 1 at half the connections: a single process that, like each of two workers, gets half
 * the load, so fewer requests per event-loop wake-up (the batching a second process loses). Per
 * run it prints (stderr) each process's share (primary first), wake-ups per request (voluntary
 * context switches of each process's main thread) and the load average; the table gives medians
 * and the range of the per-pair ratios. Runs the compiled build (dist/, rebuilt when stale).
 *
 * Environment: WORKERS_BENCH_SECONDS (per run with wrk, default 5), WORKERS_BENCH_REQUESTS (per
 * run with autocannon, default 20000), WORKERS_BENCH_DRIVER=autocannon (use it even when wrk is
 * installed), WORKERS_BENCH_ROUNDS (default 3), WORKERS_BENCH_CONNECTIONS (default 20).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpus, loadavg } from 'node:os';
import { has, load, processSamples, treeCpuSeconds } from './measure.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const requests = Number(process.env.WORKERS_BENCH_REQUESTS ?? 20_000);
const rounds = Number(process.env.WORKERS_BENCH_ROUNDS ?? 3);
const connections = Number(process.env.WORKERS_BENCH_CONNECTIONS ?? 20);
const seconds = Number(process.env.WORKERS_BENCH_SECONDS ?? 5);
const useWrk = process.env.WORKERS_BENCH_DRIVER !== 'autocannon' && has('wrk');
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
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      // The compiled build, as deployed (built below when stale).
      env: { ...process.env, LOG_FORMAT: 'json', SWITCHYARD_FROM_SOURCE: '0' },
    },
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

/**
 * The load: wrk for WORKERS_BENCH_SECONDS when it is installed (one C thread: it saturates the
 * gateway where a Node load generator saturates itself first, and a saturated gateway batches as a
 * production one does), else `amount` requests by autocannon in its own process. Either way its CPU
 * is not the gateway's.
 */
async function drive(
  url: string,
  amount: number,
  conns: number,
): Promise<{ rps: number; requests: number; non2xx: number; errors: number; codes: unknown }> {
  if (useWrk) {
    const sample = await load(
      { url, headers: {}, http2: false, seconds, connections: conns, threads: 1 },
      () => undefined,
    );
    return { rps: sample.rps, requests: sample.requests, non2xx: 0, errors: 0, codes: {} };
  }
  const script = `import ac from 'autocannon';const r=await ac({url:${JSON.stringify(url)},connections:${conns},amount:${amount},timeout:30});process.stdout.write(JSON.stringify({rps:r.requests.average,requests:r.requests.total,non2xx:r.non2xx,errors:r.errors,codes:r.statusCodeStats}))`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
  await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return JSON.parse(out) as { rps: number; requests: number; non2xx: number; errors: number; codes: unknown };
}

/** One measured run: CPU µs and wake-ups per request, per process (primary first) and in all. */
interface Run {
  perRequest: number;
  wakeupsPerRequest: number;
  /** µs/request of each process: [primary or the single process, worker 1, worker 2, …]. */
  split: number[];
  rps: number;
  load: number;
}

async function measureRun(pid: number, url: string, amount: number, conns: number): Promise<Run> {
  await settle(pid);
  const before = processSamples(pid);
  const result = await drive(url, amount, conns);
  const after = processSamples(pid);
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(
      `${url}: ${result.non2xx} non-2xx, ${result.errors} errors ${JSON.stringify(result.codes)}`,
    );
  const served = result.requests > 0 ? result.requests : amount;
  const split = after.map((a) => {
    const b = before.find((x) => x.pid === a.pid);
    return ((a.seconds - (b?.seconds ?? 0)) * 1e6) / served;
  });
  const wakeups = after.reduce(
    (sum, a) => sum + a.wakeups - (before.find((x) => x.pid === a.pid)?.wakeups ?? 0),
    0,
  );
  return {
    perRequest: split.reduce((a, b) => a + b, 0),
    wakeupsPerRequest: wakeups / served,
    split,
    rps: result.rps,
    load: loadavg()[0] ?? NaN,
  };
}

const median = (values: readonly number[] = []): number => {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
const spread = (values: readonly number[], digits = 2): string =>
  values.length === 0 ? '' : `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

async function main(): Promise<void> {
  const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error('scripts/build.mjs failed');
  const origin: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/origin.ts')], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const originPort = Number((await lineOf(origin, /listening (\d+)/, 30_000))[1]);
  /** Runs per `${scenario}:${variant}`; variants: w1, w2, and w1 at half the connections (w1half). */
  const runs = new Map<string, Run[]>();
  const ratios = new Map<string, number[]>();
  const halfRatios = new Map<string, number[]>();
  const add = <T>(map: Map<string, T[]>, key: string, value: T) =>
    map.set(key, [...(map.get(key) ?? []), value]);
  const half = Math.max(1, Math.floor(connections / 2));
  // Both gateways run side by side and each scenario is measured on one right after the other,
  // so the two see the same background load (this machine is shared); the ratio is taken per pair,
  // and the order within a pair alternates from round to round.
  const gateways = [await startGateway(1, originPort), await startGateway(2, originPort)] as const;
  try {
    // Warm-up: as many requests as a measured run, so each worker's JIT has settled too.
    for (const gw of gateways)
      for (const scenario of scenarios) await drive(`${gw.url}/${scenario}`, requests, connections);
    for (let round = 1; round <= rounds; round++) {
      for (const scenario of scenarios) {
        const order = round % 2 === 1 ? [0, 1] : [1, 0];
        const pair: Run[] = [];
        for (const i of order) {
          const gw = gateways[i] as (typeof gateways)[number];
          const run = await measureRun(gw.pid, `${gw.url}/${scenario}`, requests, connections);
          pair[i] = run;
          add(runs, `${scenario}:w${i + 1}`, run);
          process.stderr.write(
            `round ${round} workers=${i + 1} ${scenario}: ${run.perRequest.toFixed(1)} µs/request ` +
              `(${i === 0 ? 'process' : 'primary, workers'} ${run.split.map((v) => v.toFixed(1)).join(', ')}), ` +
              `${run.wakeupsPerRequest.toFixed(2)} wake-ups/request, ${run.rps.toFixed(0)} rps, load ${run.load.toFixed(1)}\n`,
          );
        }
        const one = gateways[0];
        const halfRun = await measureRun(one.pid, `${one.url}/${scenario}`, requests, half);
        add(runs, `${scenario}:w1half`, halfRun);
        process.stderr.write(
          `round ${round} workers=1 at ${half} connections ${scenario}: ${halfRun.perRequest.toFixed(1)} µs/request, ` +
            `${halfRun.wakeupsPerRequest.toFixed(2)} wake-ups/request, load ${halfRun.load.toFixed(1)}\n`,
        );
        const [w1, w2] = pair as [Run, Run];
        add(ratios, scenario, w2.perRequest / w1.perRequest);
        add(halfRatios, scenario, halfRun.perRequest / w1.perRequest);
      }
    }
  } finally {
    await Promise.all(gateways.map((gw) => gw.stop()));
    origin.kill('SIGTERM');
  }
  const loads = [...runs.values()].flat().map((r) => r.load);
  const lines = [
    `CPU per request, all gateway processes (${rounds} rounds × ${useWrk ? `${seconds} s of wrk` : `${requests} requests by autocannon`}, ${connections} connections; ` +
      `load average ${spread(loads, 1)} during the runs, ${cpus().length} cores)`,
    '',
    '| scenario | workers: 1 µs/req | workers: 2 µs/req (primary) | ratio, median (range) | wake-ups/req w1 / w2 | workers: 1 at ' +
      `${half} conns: µs/req, × w1 (range) |`,
    '|---|---|---|---|---|---|',
  ];
  for (const scenario of scenarios) {
    const w1 = runs.get(`${scenario}:w1`) ?? [];
    const w2 = runs.get(`${scenario}:w2`) ?? [];
    const wh = runs.get(`${scenario}:w1half`) ?? [];
    const r = ratios.get(scenario) ?? [];
    const h = halfRatios.get(scenario) ?? [];
    lines.push(
      `| ${scenario} | ${median(w1.map((x) => x.perRequest)).toFixed(1)} | ` +
        `${median(w2.map((x) => x.perRequest)).toFixed(1)} (${median(w2.map((x) => x.split[0] ?? 0)).toFixed(1)}) | ` +
        `${median(r).toFixed(2)}× (${spread(r)}) | ` +
        `${median(w1.map((x) => x.wakeupsPerRequest)).toFixed(2)} / ${median(w2.map((x) => x.wakeupsPerRequest)).toFixed(2)} | ` +
        `${median(wh.map((x) => x.perRequest)).toFixed(1)}, ${median(h).toFixed(2)}× (${spread(h)}) |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
