/**
 * Startup and memory of the compiled build with the shipped config (config/system.yaml,
 * config/gateway.yaml): cold start to the first 200 from GET /hello, RSS once it has served
 * a request and sat idle 2 s, and again once idle long enough (15 s) for V8's memory reducer to
 * hand back the young generation the start grew (about 10 s after the last allocation), and the
 * wall time of `switchyard validate`. Each is the median of
 * RUNS fresh processes; CPU time (user+system, from /proc) is printed beside the wall time
 * because a busy machine stretches the latter. The same figures for the TypeScript sources run
 * through tsx are printed for comparison. Goals (docs/benchmarks.md): RSS ≤ 80 MiB, first 200
 * ≤ 500 ms, validate ≤ 400 ms.
 * Run: npm run bench:startup  (builds dist/ first when it is stale; STARTUP_MODES=dist for the build only)
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/free-port.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.RUNS ?? 5);
const IDLE_MS = 2000;
/** Idle time after which the heap has settled: V8 shrinks the young generation ~10 s after activity stops. */
const SETTLED_MS = 15_000;
const CONFIG = ['--system-config', 'config/system.yaml', '--gateway-config', 'config/gateway.yaml'];
const CLK_TCK = 100;

/** How a mode starts the CLI: the build's entry module directly, or the sources through bin/. */
type Mode = 'dist' | 'source';

/** bin/switchyard.js; SWITCHYARD_FROM_SOURCE (set per mode below) picks the build or the sources. */
function command(_mode: Mode, args: string[]): string[] {
  return [join(root, 'bin', 'switchyard.js'), ...args];
}

/** user+system CPU milliseconds of a live process. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1]) / 1024;
}

interface ServeRun {
  firstOkMs: number;
  firstOkCpuMs: number;
  idleRssMiB: number;
  settledRssMiB: number;
}

async function serveOnce(mode: Mode): Promise<ServeRun> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const started = performance.now();
  const child = spawn(process.execPath, command(mode, CONFIG), {
    cwd: root,
    env: {
      ...process.env,
      GATEWAY_BIND: '127.0.0.1',
      GATEWAY_PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_PASSWORD: 'bench-startup',
      SWITCHYARD_FROM_SOURCE: mode === 'source' ? '1' : '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const pid = child.pid ?? 0;
  try {
    const deadline = started + 60_000;
    let firstOkMs = -1;
    let firstOkCpuMs = 0;
    while (firstOkMs < 0) {
      if (performance.now() > deadline || child.exitCode !== null)
        throw new Error(`${mode}: no 200 from /hello`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/hello`);
        await res.arrayBuffer();
        if (res.status === 200) {
          firstOkMs = performance.now() - started;
          firstOkCpuMs = cpuMs(pid);
        }
      } catch {
        await sleep(5);
      }
    }
    // One proxied request too, so the upstream pool exists, then idle.
    await (await fetch(`http://127.0.0.1:${port}/api/hello`)).arrayBuffer();
    await sleep(IDLE_MS);
    const idleRssMiB = rssMiB(pid);
    await sleep(SETTLED_MS - IDLE_MS);
    return { firstOkMs, firstOkCpuMs, idleRssMiB, settledRssMiB: rssMiB(pid) };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }
}

interface ValidateRun {
  wallMs: number;
  cpuMs: number;
}

function validateOnce(mode: Mode): ValidateRun {
  return validateOnceOf([process.execPath, ...command(mode, ['validate', ...CONFIG])], mode);
}

/** Runs `argv` to completion; its wall time and its CPU time. */
function validateOnceOf(argv: string[], mode?: Mode): ValidateRun {
  const started = performance.now();
  // The shell's `times` reports its children's CPU, so no wrapper inside the measured process.
  const script = '"$@"; status=$?; times >&2; exit $status';
  const run = spawnSync('/bin/sh', ['-c', script, 'sh', ...argv], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, SWITCHYARD_FROM_SOURCE: mode === 'source' ? '1' : '0' },
  });
  const wallMs = performance.now() - started;
  if (run.status !== 0) throw new Error(`${mode ?? argv.join(' ')} failed: ${run.stdout}${run.stderr}`);
  // `times` prints the shell's then its children's user and system time: "0m0.012s 0m0.004s".
  const children = run.stderr.trim().split('\n').at(-1) ?? '';
  const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  return { wallMs, cpuMs: ((seconds[0] ?? 0) + (seconds[1] ?? 0)) * 1000 };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

async function measure(mode: Mode): Promise<Record<string, number>> {
  const serves: ServeRun[] = [];
  const validates: ValidateRun[] = [];
  for (let i = 0; i < RUNS; i++) {
    serves.push(await serveOnce(mode));
    validates.push(validateOnce(mode));
  }
  return {
    firstOkMs: median(serves.map((s) => s.firstOkMs)),
    firstOkCpuMs: median(serves.map((s) => s.firstOkCpuMs)),
    idleRssMiB: median(serves.map((s) => s.idleRssMiB)),
    settledRssMiB: median(serves.map((s) => s.settledRssMiB)),
    validateMs: median(validates.map((v) => v.wallMs)),
    validateCpuMs: median(validates.map((v) => v.cpuMs)),
  };
}

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (build.status !== 0) process.exit(build.status ?? 1);

// What a bare `node -e 0` costs right now: on a quiet machine about 40 ms of CPU; more means the
// figures below are stretched by other load.
const bare = validateOnceOf([process.execPath, '-e', '0']);

const rows: [Mode, Record<string, number>][] = [];
// STARTUP_MODES=dist skips the (slow) tsx run.
const modes = (process.env.STARTUP_MODES?.split(',') ?? ['dist', 'source']) as Mode[];
for (const mode of modes) rows.push([mode, await measure(mode)]);

const fmt = (n: number | undefined, digits = 0) => (n ?? NaN).toFixed(digits);
console.log(`\nStartup and memory, shipped config, median of ${RUNS} runs (node ${process.version})`);
console.log(
  `bare 'node -e 0' now: ${fmt(bare.wallMs)} ms wall, ${fmt(bare.cpuMs)} ms CPU (quiet machine: ~40 ms)\n`,
);
console.log('| build | first 200 (wall / CPU ms) | RSS idle 2 s / 15 s (MiB) | validate (wall / CPU ms) |');
console.log('|---|---|---|---|');
for (const [mode, r] of rows) {
  console.log(
    `| ${mode === 'dist' ? 'compiled (dist/)' : 'sources via tsx'} | ${fmt(r.firstOkMs)} / ${fmt(r.firstOkCpuMs)} | ${fmt(r.idleRssMiB, 1)} / ${fmt(r.settledRssMiB, 1)} | ${fmt(r.validateMs)} / ${fmt(r.validateCpuMs)} |`,
  );
}
const dist = rows[0]?.[1] ?? {};
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
console.log(
  `\ngoals (compiled): idle RSS ≤ 80 MiB ${verdict((dist.settledRssMiB ?? Infinity) <= 80)} (15 s idle; ` +
    `${verdict((dist.idleRssMiB ?? Infinity) <= 80)} at 2 s); ` +
    `first 200 ≤ 500 ms ${verdict((dist.firstOkMs ?? Infinity) <= 500)}; ` +
    `validate ≤ 400 ms ${verdict((dist.validateMs ?? Infinity) <= 400)}`,
);
