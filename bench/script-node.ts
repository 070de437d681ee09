/**
 * Cost of a Lua script node. Run: node --import tsx bench/script-node.ts
 *
 * 1. µs per script node execution, measured on the node itself (CPU time of
 *    this process, best of several rounds, so a busy machine skews it less):
 *    a script that only returns ctx, and the reference bench script that
 *    reads a header and sets another. The raw fengari call of STACK.md §2 is
 *    measured beside them as the yardstick of this machine.
 * 2. requests/s through a real gateway: listener → upstream beside
 *    listener → script (sets a header) → upstream, same origin, same load,
 *    interleaved; with the gateway's CPU time per request (from /proc), whose
 *    difference is the script's cost per request even on a busy machine.
 *
 * Environment: BENCH_SECONDS (per load run, default 5), BENCH_ROUNDS (default
 * 3), BENCH_CONNECTIONS (default 32), BENCH_SKIP_LOAD=1 for part 1 only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lauxlib, lua, lualib, to_luastring } from 'fengari';
import { Context } from '../src/core/context.js';
import type { NodeInstance } from '../src/core/plugin.js';
import { LuaProgram } from '../src/lua/program.js';
import { script } from '../src/plugins/scripting/script.js';
import { freePort } from '../test/support/free-port.js';
import { pluginEnv } from '../test/support/plugin-env.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** The inline script of the reference's bench/gateways/featherbit/script/gateway.yaml. */
const HEADER_SCRIPT = `function execute(ctx)
  local v = ctx.request.headers["x-bench-in"]
  v = v and v[1] or ""
  ctx.request.headers["x-bench-script"] = string.upper(v) .. "-" .. #v
  return ctx
end`;

const env = pluginEnv({ policy: 'bench', nodeId: 'script' });

function context(): Context {
  return new Context({
    method: 'GET',
    url: '/bench/items?page=2',
    host: 'gateway.bench',
    scheme: 'http',
    protocol: 'http1',
    headers: {
      host: 'gateway.bench',
      'user-agent': 'bench/1.0',
      accept: '*/*',
      'x-bench-in': 'hello',
    },
    remoteAddress: '127.0.0.1',
    remotePort: 40000,
  });
}

/** CPU µs per call of `f`, best of `tries` batches. */
function cpuMicros(f: () => void, batch = 5000, tries = 8): number {
  for (let i = 0; i < 2000; i++) f();
  let best = Infinity;
  for (let t = 0; t < tries; t++) {
    const start = process.cpuUsage();
    for (let i = 0; i < batch; i++) f();
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / batch);
  }
  return best;
}

function node(inline: string): NodeInstance<string> {
  return script.create({ runtime: 'lua', inline, timeout_ms: 5000, memory_limit_mb: 64 }, env);
}

/** The in-process engine the node ran on before the Lua workers (still what a worker runs). */
function inProcess(source: string): LuaProgram {
  return LuaProgram.load([{ source, chunkName: '=bench', label: 'inline' }], {
    timeoutMs: 5000,
    modulesDir: undefined,
    print: () => undefined,
    ports: ['success', 'respond'],
  });
}

/** CPU µs the main thread (the event loop) has used, from /proc (10 ms ticks; Linux only). */
function mainThreadCpu(): number {
  try {
    const fields =
      readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10000;
  } catch {
    return NaN;
  }
}

/**
 * Process CPU µs (main thread plus the Lua workers: process.cpuUsage counts
 * every thread), main-thread CPU µs and wall µs per call of the async `f`,
 * with `concurrency` calls in flight; best of `tries` batches.
 */
async function asyncMicros(
  f: () => Promise<unknown>,
  concurrency: number,
  batch = 20000,
  tries = 5,
): Promise<{ cpu: number; main: number; wall: number }> {
  const runBatch = async (n: number): Promise<void> => {
    let left = n;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await f();
      }),
    );
  };
  await runBatch(2000);
  let cpu = Infinity;
  let main = Infinity;
  let wall = Infinity;
  for (let t = 0; t < tries; t++) {
    const start = process.cpuUsage();
    const mainStart = mainThreadCpu();
    const started = performance.now();
    await runBatch(batch);
    const used = process.cpuUsage(start);
    cpu = Math.min(cpu, (used.user + used.system) / batch);
    main = Math.min(main, (mainThreadCpu() - mainStart) / batch);
    wall = Math.min(wall, ((performance.now() - started) * 1000) / batch);
  }
  return { cpu, main, wall };
}

async function micro(): Promise<void> {
  const noop = node('function execute(ctx) return ctx end');
  const header = node(HEADER_SCRIPT);
  const check = context();
  if ((await header.run(check)) !== 'success' || check.request.headers['x-bench-script'] !== 'HELLO-5')
    throw new Error('the bench script did not set its header');
  const engine = inProcess(HEADER_SCRIPT);

  // STACK.md §2 workload: build a table, pcall a handler, read two fields back.
  const L = lauxlib.luaL_newstate();
  lauxlib.luaL_requiref(L, '_G', lualib.luaopen_base, 1);
  lua.lua_settop(L, 0);
  const chunk = to_luastring(
    'function handler(req) return { status = 200, path = req.path, n = req.n + 1 } end',
  );
  let done = false;
  lua.lua_load(L, () => (done ? null : ((done = true), chunk)), null, '=stack', 't');
  lua.lua_pcall(L, 0, 0, 0);
  const raw = () => {
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, 2);
    lua.lua_getfield(L, -1, 'handler');
    lua.lua_createtable(L, 0, 2);
    lua.lua_pushstring(L, '/x');
    lua.lua_setfield(L, -2, 'path');
    lua.lua_pushinteger(L, 1);
    lua.lua_setfield(L, -2, 'n');
    lua.lua_pcall(L, 1, 1, 0);
    lua.lua_getfield(L, -1, 'status');
    lua.lua_getfield(L, -2, 'path');
    lua.lua_settop(L, 0);
  };

  const rows: [string, number][] = [
    ['raw fengari call (STACK.md §2 measured 8.4 µs)', cpuMicros(raw)],
    ['in-process engine: read a header, set a header', cpuMicros(() => void engine.run(context()))],
    ['building the Context alone (included below)', cpuMicros(() => void context())],
  ];
  console.log('\nµs of CPU per execution, in process (best of 8 batches of 5000):');
  for (const [name, us] of rows) console.log(`  ${name.padEnd(50)} ${us.toFixed(1).padStart(7)} µs`);

  console.log(
    '\nscript node through the Lua workers, per call: CPU of all threads, CPU of the main thread (event loop), wall:',
  );
  let loaded = Infinity;
  let loadedMain = Infinity;
  for (const [name, n] of [
    ['return ctx', noop],
    ['read a header, set a header', header],
  ] as const) {
    for (const concurrency of [1, 32]) {
      const r = await asyncMicros(() => Promise.resolve(n.run(context())), concurrency);
      if (n === header && concurrency === 32) {
        loaded = r.cpu;
        loadedMain = r.main;
      }
      console.log(
        `  ${`${name}, ${concurrency} in flight`.padEnd(40)} ${r.cpu.toFixed(1).padStart(6)} µs CPU ${r.main.toFixed(1).padStart(6)} µs main ${r.wall.toFixed(1).padStart(6)} µs wall`,
      );
    }
  }
  const verdict = loadedMain < 50 ? 'under' : 'OVER';
  console.log(
    `  → under load the header script node costs the event loop ${loadedMain.toFixed(1)} µs (${verdict} the 50 µs target)` +
      ` and the process ${loaded.toFixed(1)} µs of CPU across threads`,
  );
}

const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function startProcess(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ port: number; pid: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out) ?? /"port":(\d+)/.exec(out);
      if (m) resolve({ port: Number(m[1]), pid: child.pid ?? 0 });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

/** CPU time (user + system) a process has used so far, in µs, from /proc. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

interface Sample {
  rps: number;
  /** Gateway CPU per request: robust to other load on the machine, unlike requests/s. */
  cpuPerRequest: number;
}

/** One autocannon run, in its own process so it does not share the measured event loop. */
function load(url: string, gatewayPid: number): Sample {
  const code = `import ac from 'autocannon';const r=await ac({url:${JSON.stringify(url)},headers:{'x-bench-in':'hello'},connections:${connections},duration:${seconds}});process.stdout.write(JSON.stringify({rps:r.requests.average,total:r.requests.total,non2xx:r.non2xx}))`;
  const before = cpuOf(gatewayPid);
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
  });
  const used = cpuOf(gatewayPid) - before;
  const parsed = JSON.parse(result.stdout) as { rps: number; total: number; non2xx: number };
  if (parsed.non2xx > 0) throw new Error(`${url}: ${parsed.non2xx} non-2xx responses`);
  return { rps: parsed.rps, cpuPerRequest: used / parsed.total };
}

const NOOP_SCRIPT = 'function execute(ctx) return ctx end';

function scriptPolicy(name: string, source: string, upstream: string): string {
  return `  - name: ${name}
    nodes:
      - { id: listener, type: listener }
      - { id: script, type: script, config: { inline: ${JSON.stringify(source)} } }
      - { id: backend, type: upstream, config: ${upstream} }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: script.in }
      - { from: script.success, to: backend.in }
      - { from: script.respond, to: client.in }
      - { from: backend.success, to: client.in }
`;
}

function gatewayYaml(originPort: number): string {
  const upstream = `{ targets: [{ host: 127.0.0.1, port: ${originPort} }] }`;
  return `routes:
  - { name: plain, match: { path: /plain/* }, policy: plain }
  - { name: noop, match: { path: /noop/* }, policy: noop }
  - { name: scripted, match: { path: /script/* }, policy: scripted }
policies:
  - name: plain
    nodes:
      - { id: listener, type: listener }
      - { id: backend, type: upstream, config: ${upstream} }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: backend.in }
      - { from: backend.success, to: client.in }
${scriptPolicy('noop', NOOP_SCRIPT, upstream)}${scriptPolicy('scripted', HEADER_SCRIPT, upstream)}`;
}

const ADMIN_PASSWORD = 'bench-only-password';

/** Mean µs per run of each policy's script node, from the gateway's own node metrics. */
async function nodeMicros(adminPort: number): Promise<{ noop: number; scripted: number }> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
    headers: { authorization: `Basic ${Buffer.from(`bench:${ADMIN_PASSWORD}`).toString('base64')}` },
  });
  const text = await res.text();
  const metric = (name: string, policy: string): number => {
    const line = text
      .split('\n')
      .find(
        (l) => l.startsWith(`${name}{`) && l.includes(`policy="${policy}"`) && l.includes('node_id="script"'),
      );
    return Number(line?.split(' ').at(-1) ?? NaN);
  };
  const mean = (policy: string) =>
    (metric('gateway_node_duration_seconds_total', policy) * 1e6) /
    metric('gateway_node_executions_total', policy);
  return { noop: mean('noop'), scripted: mean('scripted') };
}

const VARIANTS = [
  ['plain', 'listener → upstream'],
  ['noop', 'listener → script (return ctx) → upstream'],
  ['script', 'listener → script (sets a header) → upstream'],
] as const;

async function macro(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-script-bench-'));
  try {
    const origin = await startProcess(['--import', 'tsx', 'bench/origin.ts']);
    const adminPort = await freePort();
    writeFileSync(
      join(dir, 'system.yaml'),
      'listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n' +
        `admin: { bind: 127.0.0.1, port: ${adminPort}, username: bench, password: ${ADMIN_PASSWORD} }\n`,
    );
    writeFileSync(join(dir, 'gateway.yaml'), gatewayYaml(origin.port));
    const gateway = await startProcess([
      'bin/switchyard.js',
      '--system-config',
      join(dir, 'system.yaml'),
      '--gateway-config',
      join(dir, 'gateway.yaml'),
    ]);
    const base = `http://127.0.0.1:${gateway.port}`;
    const url = (variant: string) => `${base}/${variant}/x`;
    const samples = new Map<string, Sample[]>(VARIANTS.map(([v]) => [v, []]));
    for (const [variant] of VARIANTS) load(url(variant), gateway.pid);
    for (let r = 0; r < rounds; r++) {
      for (const [variant] of VARIANTS) samples.get(variant)?.push(load(url(variant), gateway.pid));
    }
    const rps = (xs: Sample[]) => Math.max(...xs.map((x) => x.rps));
    const cpu = (xs: Sample[]) => Math.min(...xs.map((x) => x.cpuPerRequest));
    console.log(
      `\nthrough the gateway (${connections} connections, ${seconds} s × ${rounds} rounds, best round):`,
    );
    console.log(`  ${''.padEnd(46)} requests/s   gateway CPU µs/request`);
    for (const [variant, name] of VARIANTS) {
      const xs = samples.get(variant) ?? [];
      console.log(
        `  ${name.padEnd(46)} ${rps(xs).toFixed(0).padStart(10)} ${cpu(xs).toFixed(1).padStart(12)}`,
      );
    }
    const inNode = await nodeMicros(adminPort);
    console.log(
      `  time inside the script node (gateway_node_duration_seconds_total / executions): return ctx ${inNode.noop.toFixed(1)} µs, sets a header ${inNode.scripted.toFixed(1)} µs`,
    );
    const plain = cpu(samples.get('plain') ?? []);
    const header = cpu(samples.get('script') ?? []);
    const plainRps = rps(samples.get('plain') ?? []);
    const headerRps = rps(samples.get('script') ?? []);
    console.log(
      `  → the header script node adds ${(header - plain).toFixed(1)} µs of gateway CPU per request` +
        ` (${(1e6 / headerRps - 1e6 / plainRps).toFixed(1)} µs by requests/s; target < 50 µs)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await micro();
if (process.env.BENCH_SKIP_LOAD !== '1') await macro();
process.exit(0);
