/**
 * Configuration scale: how long 1,000 and 10,000 routes + policies take to parse (YAML), check
 * and compile in this process, how a route lookup costs as the table grows, and then, with a real
 * compiled gateway process, the time from start to the first 200 with 10,000 of each, the time a
 * reload (SIGHUP) takes to serve the new config when it changes one policy and when it changes
 * half of them, and the p99 and slowest request of a steady stream that runs across a reload.
 * Wall time and CPU time (this process, or the gateway's from /proc) for each: on a shared
 * machine only the CPU figures compare. Goals (docs/benchmarks.md): load ≤ 2 s, reload ≤ 2 s,
 * no request slower than 50 ms during the reload, flat lookup.
 * Run: npm run bench:config-scale   (COUNT=… overrides 10000; builds dist/ first when stale)
 * SCALE_GATEWAY_ONLY=1 skips the in-process table; SCALE_SLOWEST=1 lists the stream's slowest
 * requests with their time from the reload; GATEWAY_NODE_FLAGS passes node flags to the gateway
 * (`--trace-gc`, `--cpu-prof`), whose stdout is then shown; SCALE_WORKERS sets `workers:`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type * as ConfigModule from '../src/config/gateway.js';
import type * as YamlDataModule from '../src/config/yaml-data.js';
import type * as GatewayModule from '../src/gateway.js';
import type * as LoggerModule from '../src/core/logger.js';
import { freePort } from '../test/support/free-port.js';
import { scaleConfig, scaleConfigYaml, type ScaleOptions } from './config-scale-config.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const COUNT = Number(process.env.COUNT ?? 10_000);
const STREAM_CONCURRENCY = 4;

const ms = (n: number) => `${n.toFixed(0)} ms`;
/** CPU milliseconds of this process so far (every thread). */
const cpuNow = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
/** CPU milliseconds of another process so far (utime + stime, /proc), or NaN without /proc. */
function cpuOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}
const both = (wall: number, cpu: number) => `${ms(wall)} / ${ms(cpu)}`;

/** Phases of loading `count` routes and policies in this process, best of `rounds`. */
function inProcess(count: number, rounds: number) {
  const text = scaleConfigYaml(count, { upstreamPort: 9 });
  let best = { parse: Infinity, shape: Infinity, compile: Infinity, lookupNs: Infinity };
  let cpu = { parse: Infinity, shape: Infinity, compile: Infinity };
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    let c = cpuNow();
    const raw: unknown = parseYamlData(text);
    const parseMs = performance.now() - t;
    const parseCpu = cpuNow() - c;
    t = performance.now();
    c = cpuNow();
    const config = checkGatewayShape(raw);
    const shapeMs = performance.now() - t;
    const shapeCpu = cpuNow() - c;
    t = performance.now();
    c = cpuNow();
    const runtime = compileWith(config, silentLogger, process.env);
    const compileMs = performance.now() - t;
    const compileCpu = cpuNow() - c;
    cpu = {
      parse: Math.min(cpu.parse, parseCpu),
      shape: Math.min(cpu.shape, shapeCpu),
      compile: Math.min(cpu.compile, compileCpu),
    };
    // The last declared host route: the worst case of first-match-wins.
    let last = count - 1;
    while (last % 3 !== 2) last--;
    const host = `svc${last}.example.test`;
    const lookups = 200_000;
    t = performance.now();
    for (let i = 0; i < lookups; i++) runtime.router.match('GET', host, '/h/x', {});
    const lookupNs = ((performance.now() - t) * 1e6) / lookups;
    if (runtime.router.match('GET', host, '/h/x', {})?.name !== `r${last}`) throw new Error('lookup missed');
    void runtime.close();
    best = {
      parse: Math.min(best.parse, parseMs),
      shape: Math.min(best.shape, shapeMs),
      compile: Math.min(best.compile, compileMs),
      lookupNs: Math.min(best.lookupNs, lookupNs),
    };
  }
  return { bytes: text.length, ...best, cpu };
}

/** The compiled gateway on `gatewayPath`: start to first 200, a SIGHUP reload under a request stream. */
async function inGateway(count: number) {
  const origin = createServer((_req, res) => res.end('origin')).listen(0, '127.0.0.1');
  await new Promise((resolve) => origin.once('listening', resolve));
  const upstreamPort = (origin.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-scale-'));
  const port = await freePort();
  const adminPort = await freePort();
  const gatewayPath = join(dir, 'gateway.yaml');
  writeFileSync(
    join(dir, 'system.yaml'),
    // No file watcher: each reload is one SIGHUP.
    `listener: { bind: 127.0.0.1, port: ${port} }\nconfig: { watch: false }\nlogging: { level: warn }\n` +
      // SCALE_WORKERS=2: the same with worker processes (docs/workers.md).
      `workers: ${process.env.SCALE_WORKERS ?? 1}\n` +
      `admin: { bind: 127.0.0.1, port: ${adminPort}, username: admin, password: bench-scale }\n`,
  );
  writeFileSync(gatewayPath, scaleConfigYaml(count, { upstreamPort, version: 'v1' }));
  const started = performance.now();
  // The build, even if a source changed since (bin/switchyard.js).
  const child = spawn(
    process.execPath,
    [
      // GATEWAY_NODE_FLAGS: node flags for the gateway (e.g. --trace-gc, whose lines go to this stdout).
      ...(process.env.GATEWAY_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== ''),
      join(root, 'bin', 'switchyard.js'),
      '--system-config',
      join(dir, 'system.yaml'),
      '--gateway-config',
      gatewayPath,
    ],
    {
      stdio: ['ignore', process.env.GATEWAY_NODE_FLAGS ? 'inherit' : 'ignore', 'inherit'],
      env: { ...process.env, SWITCHYARD_FROM_SOURCE: '0' },
    },
  );
  const agent = new Agent({ connections: STREAM_CONCURRENCY + 2 });
  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { dispatcher: agent });
    return { status: res.statusCode, body: await res.body.text() };
  };
  try {
    /** Polls every `everyMs`: a poll is a request the gateway serves, CPU the reload figures include. */
    const waitFor = async (what: string, everyMs: number, ok: () => Promise<boolean>) => {
      const deadline = performance.now() + 300_000;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`gateway exited while waiting for ${what}`);
        if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        if (await ok().catch(() => false)) return;
        await sleep(everyMs);
      }
    };
    await waitFor('the first 200', 5, async () => (await get('/items/0')).status === 200);
    const loadMs = performance.now() - started;
    const loadCpu = cpuOf(child.pid);

    /** Rewrites gateway.yaml, sends SIGHUP, polls (20 ms) until `/items/0` answers `expect`: wall and gateway CPU. */
    const reload = async (options: ScaleOptions | 'written', expect: string) => {
      // 'written': the file was written before the stream started, as writing 5 MB stalls this
      // process (its requests in flight) for tens of milliseconds.
      if (options !== 'written') writeFileSync(gatewayPath, scaleConfigYaml(count, options));
      const at = performance.now();
      const cpuBefore = cpuOf(child.pid);
      child.kill('SIGHUP');
      await waitFor(`the reloaded config (${expect})`, 20, async () =>
        (await get('/items/0')).body.startsWith(`${expect} `),
      );
      return { at, wall: performance.now() - at, cpu: cpuOf(child.pid) - cpuBefore };
    };
    await sleep(500);
    // Without traffic: what a reload costs the gateway (the poll for the new answer aside).
    const one = await reload({ upstreamPort, versionOf: (i) => (i === 0 ? 'v2' : 'v1') }, 'v2');
    await sleep(500);
    const half = await reload({ upstreamPort, version: 'v3' }, 'v3');
    await sleep(500);

    /**
     * A steady stream on a route every version keeps: 1 s before `change`, during it and 1 s after;
     * the slowest and p99 request of each part.
     */
    const underStream = async (
      label: string,
      change: () => Promise<{ at: number; wall: number; cpu: number }>,
    ) => {
      let streaming = true;
      const samples: { at: number; ms: number }[] = [];
      const failures: string[] = [];
      const stream = Promise.all(
        Array.from({ length: STREAM_CONCURRENCY }, async () => {
          while (streaming) {
            const t = performance.now();
            try {
              const res = await get('/items/6');
              if (res.status !== 200) failures.push(`status ${res.status}`);
            } catch (err) {
              failures.push((err as Error).message);
            }
            samples.push({ at: t, ms: performance.now() - t });
          }
        }),
      );
      await sleep(1000);
      const changed = await change();
      await sleep(1000);
      streaming = false;
      await stream;
      const { at, wall } = changed;
      if (process.env.SCALE_SLOWEST !== undefined)
        for (const s of [...samples].sort((a, b) => b.ms - a.ms).slice(0, 8))
          console.log(
            `slow (${label}): ${s.ms.toFixed(1)} ms at ${(s.at - at).toFixed(0)} ms from its start`,
          );
      const part = (from: number, to: number) =>
        samples.filter((s) => s.at >= from && s.at < to).map((s) => s.ms);
      const before = part(-Infinity, at);
      const during = part(at, at + wall);
      const after = part(at + wall, Infinity);
      const p99 = (values: number[]) =>
        [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? 0;
      const max = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0);
      return {
        ...changed,
        p99BeforeMs: p99(before),
        p99DuringMs: p99(during),
        maxBeforeMs: max(before),
        maxDuringMs: max(during),
        // The second after: the old configuration closing, and the collection of its memory.
        maxAfterMs: max(after),
        requestsDuring: during.length,
        failures,
      };
    };

    // A reload that changes every mocking policy (half of them); the file is written first, as
    // writing 5 MB stalls this process (its requests in flight) for tens of milliseconds.
    writeFileSync(gatewayPath, scaleConfigYaml(count, { upstreamPort, version: 'v4' }));
    const streamed = await underStream('reload', () => reload('written', 'v4'));
    // An Admin API write of one policy: validated, compiled, written back to gateway.yaml.
    const policy = scaleConfig(2, { upstreamPort, version: 'v5' }).policies[0] as { name: string };
    const auth = `Basic ${Buffer.from('admin:bench-scale').toString('base64')}`;
    const admin = await underStream('admin write', async () => {
      const at = performance.now();
      const res = await request(`http://127.0.0.1:${adminPort}/api/policies/${policy.name}`, {
        method: 'PUT',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(policy),
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`admin write: ${res.statusCode} ${text}`);
      return { at, wall: performance.now() - at, cpu: NaN };
    });
    if ((await get('/items/0')).body.startsWith('v5 ') !== true)
      throw new Error('the admin write is not served');
    return { loadMs, loadCpu, one, half, streamed, admin };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    await agent.close();
    origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (build.status !== 0) process.exit(build.status ?? 1);
// The compiled modules, as the gateway process runs them.
const fromDist = (path: string): Promise<unknown> => import(join(root, 'dist', path));
const { checkGatewayShape } = (await fromDist('config/gateway.js')) as typeof ConfigModule;
const { parseYamlData } = (await fromDist('config/yaml-data.js')) as typeof YamlDataModule;
const bareStart = performance.now();
const bare = spawnSync(
  process.execPath,
  ['-e', 'const u = process.cpuUsage(); console.log((u.user + u.system) / 1000)'],
  {
    encoding: 'utf8',
  },
);
console.log(
  `\nA bare \`node -e\` here: ${ms(performance.now() - bareStart)} wall, ${ms(Number(bare.stdout))} CPU (about 40 ms of CPU on a quiet machine).`,
);
const { compileWith } = (await fromDist('gateway.js')) as typeof GatewayModule;
const { silentLogger } = (await fromDist('core/logger.js')) as typeof LoggerModule;

console.log(
  `\nConfig scale (node ${process.version}), in this process, best of 2 after a warm-up round; wall / CPU\n`,
);
console.log(
  '| routes + policies | YAML bytes | YAML parse | shape check | compile | lookup, last host route |',
);
console.log('|---|---|---|---|---|---|');
if (process.env.SCALE_GATEWAY_ONLY === undefined) inProcess(100, 1);
for (const count of process.env.SCALE_GATEWAY_ONLY === undefined ? [1000, COUNT] : []) {
  const r = inProcess(count, 2);
  console.log(
    `| ${count} | ${(r.bytes / 1e6).toFixed(1)} MB | ${both(r.parse, r.cpu.parse)} | ${both(r.shape, r.cpu.shape)} | ${both(r.compile, r.cpu.compile)} | ${r.lookupNs.toFixed(0)} ns |`,
  );
}

const g = await inGateway(COUNT);
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`\nCompiled gateway process, ${COUNT} routes + ${COUNT} policies (load average ${load}):`);
console.log(`- start to first 200: ${ms(g.loadMs)} wall, ${ms(g.loadCpu)} CPU of the gateway process`);
console.log(
  `- SIGHUP to serving the new config, 1 policy changed: ${ms(g.one.wall)} wall, ${ms(g.one.cpu)} CPU (all threads)`,
);
console.log(
  `- SIGHUP to serving the new config, ${Math.ceil(COUNT / 2)} policies changed: ${ms(g.half.wall)} wall, ${ms(g.half.cpu)} CPU`,
);
console.log(
  `- the same reload under a ${STREAM_CONCURRENCY}-wide request stream: ${ms(g.streamed.wall)} wall, ` +
    `${ms(g.streamed.cpu)} CPU (stream included)`,
);
for (const [what, r] of [
  ['the reload', g.streamed],
  ['the Admin API write (PUT /api/policies/p0, persisted)', g.admin],
] as const) {
  console.log(
    `- ${what}: ${ms(r.wall)} to serve it; slowest request of the stream ${ms(r.maxBeforeMs)} before, ` +
      `${ms(r.maxDuringMs)} during (${r.requestsDuring} requests), ${ms(r.maxAfterMs)} in the second after; ` +
      `p99 ${ms(r.p99BeforeMs)} before, ${ms(r.p99DuringMs)} during; ` +
      `${r.failures.length} failed ${[...new Set(r.failures)].join('; ')}`,
  );
}
process.exit(0);
