/**
 * `npm run bench:kubernetes-scale` (issue 32 item 5): a gateway process with
 * `config.source: kubernetes` against the test API server (test/support/kube-api-server.ts, in
 * this process); COUNT (1000) HTTPRoutes, each an Exact path `/r/<i>` to one Service, applied at
 * once while a steady request stream (STREAM_CONCURRENCY, 4 wide, closed loop, keep-alive) runs
 * on a route that stays. Measured per round (ROUNDS, 3), apply then delete:
 * - served: from the first apply until the last route applied answers 200 (polled every 5 ms;
 *   the routes arrive in order and each translation is of the whole state, so the earlier ones
 *   are served by then — a sweep of all COUNT checks it, untimed);
 * - statuses: until every route has `Accepted: True` written back;
 * - the slowest request of the stream that started during the apply (until served), and after it
 *   (until the statuses are written), with p99 and errors;
 * - the gateway's CPU (/proc) over the round; the machine's load average before and after.
 * Deleting: until the last route answers 404. Goals (docs/kubernetes.md#scale): served ≤ 2 s, no
 * request over 50 ms during the apply.
 * The stream and the echo backend run in a worker thread, so this thread's work (the API server
 * serialising COUNT objects to the watch) does not stall them; only the gateway is measured.
 * GATEWAY_NODE_FLAGS passes node flags to the gateway (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { writeFileSync } from 'node:fs';
import { KubeApiServer, type KubeObject } from '../test/support/kube-api-server.js';
import { freePort } from '../test/support/free-port.js';
import { tempDir } from '../test/support/temp-dir.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const COUNT = Number(process.env['COUNT'] ?? 1000);
const ROUNDS = Number(process.env['ROUNDS'] ?? 3);
const STREAM_CONCURRENCY = Number(process.env['STREAM_CONCURRENCY'] ?? 4);
const NS = 'scale';

/** The echo backend and the request stream, on their own event loop. */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const server = http.createServer((req, res) => { req.resume(); res.end('ok ' + req.url); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'port', port: server.address().port }));
let running = false;
let samples = [];
const now = () => performance.timeOrigin + performance.now();
parentPort.on('message', async (m) => {
  if (m.type === 'start') {
    running = true;
    samples = [];
    const agent = new http.Agent({ keepAlive: true, maxSockets: m.concurrency });
    const one = () => new Promise((resolve) => {
      const at = now();
      const req = http.request(m.url, { agent }, (res) => {
        res.resume();
        res.on('end', () => { samples.push([at, now() - at, res.statusCode]); resolve(); });
      });
      req.on('error', () => { samples.push([at, now() - at, 0]); resolve(); });
      req.end();
    });
    const loops = [];
    for (let i = 0; i < m.concurrency; i++) loops.push((async () => { while (running) await one(); })());
    await Promise.all(loops);
    agent.destroy();
    parentPort.postMessage({ type: 'samples', samples });
  } else if (m.type === 'stop') running = false;
  else if (m.type === 'close') server.close(() => parentPort.close());
});
`;

/** Absolute time comparable with the worker's. */
const now = () => performance.timeOrigin + performance.now();
const ms = (n: number) => `${n.toFixed(0)} ms`;

function cpuOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
function status(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function until(what: string, everyMs: number, ok: () => boolean | Promise<boolean>): Promise<number> {
  const deadline = now() + 120_000;
  for (;;) {
    if (await ok()) return now();
    if (now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

function route(i: number): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `scale-${i}`, namespace: NS },
    spec: {
      parentRefs: [{ name: 'edge' }],
      rules: [
        {
          matches: [{ path: { type: 'Exact', value: `/r/${i}` } }],
          backendRefs: [{ name: 'echo', port: 8080 }],
        },
      ],
    },
  };
}

function accepted(api: KubeApiServer, i: number): boolean {
  const o = api.get('HTTPRoute', NS, `scale-${i}`) as
    { status?: { parents?: { conditions?: { type: string; status: string }[] }[] } } | undefined;
  return (
    o?.status?.parents?.[0]?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ?? false
  );
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

interface Round {
  servedMs: number;
  statusesMs: number;
  deletedMs: number;
  slowestDuring: number;
  p99During: number;
  countDuring: number;
  slowestAfter: number;
  errors: number;
  gatewayCpuMs: number;
  load: [number, number];
}

async function main(): Promise<void> {
  const dir = tempDir('switchyard-k8s-scale-');
  const worker = new Worker(WORKER, { eval: true });
  const backendPort = await new Promise<number>((resolve) =>
    worker.once('message', (m: { port: number }) => resolve(m.port)),
  );
  const api = await KubeApiServer.start({ bookmarkIntervalMs: 1000 });
  const listenerPort = await freePort();
  const offset = listenerPort - 80;
  api.applyYaml(`
apiVersion: v1
kind: Namespace
metadata: { name: ${NS} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: switchyard }
spec: { controllerName: switchyard.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: ${NS} }
spec:
  gatewayClassName: switchyard
  listeners: [{ name: http, port: 80, protocol: HTTP }]
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: ${NS} }
spec: { ports: [{ name: http, protocol: TCP, port: 8080 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: echo-abcde, namespace: ${NS}, labels: { kubernetes.io/service-name: echo } }
addressType: IPv4
ports: [{ name: http, port: ${backendPort}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: steady, namespace: ${NS} }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: Exact, value: /steady } }]
      backendRefs: [{ name: echo, port: 8080 }]
`);
  const kubeconfig = api.writeKubeconfig(join(dir.path, 'kubeconfig'));
  writeFileSync(
    join(dir.path, 'system.yaml'),
    `
listener: { bind: 127.0.0.1, port: ${await freePort()} }
logging: { level: error }
config:
  source: kubernetes
  kubernetes:
    kubeconfig: ${kubeconfig}
    port_offset: ${offset}
    status_address: 127.0.0.1
    leader_election: { enabled: false }
`,
  );
  const child = spawn(
    process.execPath,
    [
      ...(process.env['GATEWAY_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== ''),
      join(root, 'bin', 'switchyard.js'),
      '--system-config',
      join(dir.path, 'system.yaml'),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], cwd: root, env: { ...process.env } },
  );
  const base = `http://127.0.0.1:${listenerPort}`;
  const rounds: Round[] = [];
  try {
    await until('the gateway serving /steady', 20, async () => {
      if (child.exitCode !== null) throw new Error('the gateway exited');
      return (await status(`${base}/steady`)) === 200;
    });
    const routes = Array.from({ length: COUNT }, (_, i) => route(i));
    for (let r = 0; r < ROUNDS; r++) {
      const loadBefore = loadavg()[0]!;
      const stream = new Promise<[number, number, number][]>((resolve) =>
        worker.once('message', (m: { samples: [number, number, number][] }) => resolve(m.samples)),
      );
      worker.postMessage({ type: 'start', url: `${base}/steady`, concurrency: STREAM_CONCURRENCY });
      await sleep(500);
      const cpu0 = cpuOf(child.pid);
      const t0 = now();
      for (const o of routes) api.apply(o);
      const last = `${base}/r/${COUNT - 1}`;
      const served = await until('the last route served', 5, async () => (await status(last)) === 200);
      // A cursor over the routes (each check clones the object in the API server's thread).
      let next = 0;
      const statuses = await until('every status Accepted', 50, () => {
        while (next < COUNT && accepted(api, next)) next++;
        return next === COUNT;
      });
      await sleep(300);
      worker.postMessage({ type: 'stop' });
      const samples = await stream;
      const cpu1 = cpuOf(child.pid);
      // Untimed check: every route answers.
      const failed: number[] = [];
      for (let i = 0; i < COUNT; i += 8)
        await Promise.all(
          Array.from({ length: Math.min(8, COUNT - i) }, async (_, k) => {
            if ((await status(`${base}/r/${i + k}`)) !== 200) failed.push(i + k);
          }),
        );
      if (failed.length > 0) throw new Error(`${failed.length} routes not served, e.g. /r/${failed[0]}`);
      const d0 = now();
      for (let i = 0; i < COUNT; i++) api.remove('HTTPRoute', NS, `scale-${i}`);
      const deleted = await until('the last route gone', 5, async () => (await status(last)) === 404);
      const during = samples.filter(([at]) => at >= t0 && at <= served);
      const after = samples.filter(([at]) => at > served && at <= statuses);
      const sorted = during.map(([, lat]) => lat).sort((a, b) => a - b);
      rounds.push({
        servedMs: served - t0,
        statusesMs: statuses - t0,
        deletedMs: deleted - d0,
        slowestDuring: sorted.at(-1) ?? NaN,
        p99During: percentile(sorted, 0.99),
        countDuring: during.length,
        slowestAfter: Math.max(...after.map(([, lat]) => lat), 0),
        errors: samples.filter(([, , s]) => s !== 200).length,
        gatewayCpuMs: cpu1 - cpu0,
        load: [loadBefore, loadavg()[0]!],
      });
      const x = rounds.at(-1)!;
      console.log(
        `round ${r + 1}: served ${ms(x.servedMs)}, statuses ${ms(x.statusesMs)}, deleted ${ms(x.deletedMs)}; ` +
          `stream during the apply: ${x.countDuring} requests, p99 ${ms(x.p99During)}, slowest ${ms(x.slowestDuring)}; ` +
          `slowest until the statuses ${ms(x.slowestAfter)}; errors ${x.errors}; gateway CPU ${ms(x.gatewayCpuMs)}; ` +
          `load ${x.load[0].toFixed(2)} → ${x.load[1].toFixed(2)}`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
    worker.postMessage({ type: 'close' });
    await api.close();
    agent.destroy();
    dir.remove();
  }
  const median = (f: (r: Round) => number) => {
    const v = rounds.map(f).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)]!;
  };
  const max = (f: (r: Round) => number) => Math.max(...rounds.map(f));
  console.log(
    `\n${COUNT} HTTPRoutes, ${ROUNDS} rounds, ${cpus().length} CPUs: served median ${ms(median((r) => r.servedMs))} ` +
      `(goal ≤ 2000 ms), slowest request during the apply ${ms(max((r) => r.slowestDuring))} (goal ≤ 50 ms), ` +
      `statuses median ${ms(median((r) => r.statusesMs))}, delete median ${ms(median((r) => r.deletedMs))}`,
  );
}

await main();
