/**
 * What `npm run bench` measures with: the load generators (wrk, h2load,
 * autocannon as a fallback) and their output parsed, a process tree's CPU time
 * from /proc, and the CPU pinning plan.
 */
import { join } from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** One load run against one target. Latencies in ms. */
export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  /** Requests completed in the run (the divisor of CPU per request). */
  requests: number;
}

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  http2: boolean;
  seconds: number;
  connections: number;
  /** wrk threads. */
  threads: number;
}

export function has(tool: string): boolean {
  return spawnSync(tool, ['--version']).error === undefined;
}

const toMs = (v: string | undefined, unit: string | undefined) =>
  Number(v ?? 0) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);

/** Parses h2load's summary (it reports mean and sd, not percentiles: p50 ← mean, p99 ← max). */
export function parseH2load(text: string): Sample {
  const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(text)?.[1] ?? 0);
  const failed = Number(/(\d+) failed/.exec(text)?.[1] ?? 0);
  if (failed > 0) throw new Error(`h2load saw ${failed} failed requests:\n${text}`);
  const requests = Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(text)?.[1] ?? 0);
  const row = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(text);
  return { rps, p50: toMs(row?.[5], row?.[6]), p99: toMs(row?.[3], row?.[4]), requests };
}

/** Parses wrk's `--latency` output. */
export function parseWrk(text: string): Sample {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in /.exec(text)?.[1] ?? 0);
  const p50 = /50%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  if (errors) throw new Error(`load run saw ${errors[1]} non-2xx responses:\n${text}`);
  return { rps, p50: toMs(p50?.[1], p50?.[2]), p99: toMs(p99?.[1], p99?.[2]), requests };
}

/**
 * Runs `command` to completion, or kills it `deadlineMs` in and rejects with what it printed
 * (a generator that never finishes must not hang the bench). `onStart` receives the child.
 */
function run(
  command: string,
  args: string[],
  deadlineMs: number,
  onStart: (child: ChildProcess) => void,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    onStart(child);
    let stdout = '';
    let stderr = '';
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      child.kill('SIGKILL');
    }, deadlineMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      if (expired)
        reject(
          new Error(`${command} ${args.join(' ')} did not finish in ${deadlineMs} ms:\n${stdout}${stderr}`),
        );
      else resolve({ status, stdout, stderr });
    });
  });
}

/**
 * One load run; the load generator inherits this process's CPU affinity. Asynchronous so
 * that an interrupted bench can still stop its processes; `onStart` receives the generator.
 */
export async function load(o: LoadOptions, onStart: (child: ChildProcess) => void): Promise<Sample> {
  const headerArgs = Object.entries(o.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  const deadlineMs = (o.seconds * 2 + 30) * 1000;
  if (o.http2) {
    const args = ['-c', String(Math.min(o.connections, 16)), '-m', '16', '-D', String(o.seconds)];
    const result = await run('h2load', [...args, ...headerArgs, o.url], deadlineMs, onStart);
    if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr}${result.stdout}`);
    return parseH2load(result.stdout);
  }
  if (has('wrk')) {
    const args = ['-t', String(o.threads), '-c', String(o.connections), '-d', `${o.seconds}s`, '--latency'];
    const result = await run('wrk', [...args, ...headerArgs, o.url], deadlineMs, onStart);
    if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr}`);
    return parseWrk(result.stdout);
  }
  // Fallback: autocannon in its own process so it does not share the event loop with anything measured.
  const script = `import ac from 'autocannon';const r=await ac({url:${JSON.stringify(o.url)},headers:${JSON.stringify(o.headers)},connections:${o.connections},duration:${o.seconds}});process.stdout.write(JSON.stringify({rps:r.requests.average,p50:r.latency.p50,p99:r.latency.p99,requests:r.requests.total,non2xx:r.non2xx}))`;
  const result = await run(process.execPath, ['--input-type=module', '-e', script], deadlineMs, onStart);
  const parsed = JSON.parse(result.stdout) as Sample & { non2xx: number };
  if (parsed.non2xx > 0) throw new Error(`load run saw ${parsed.non2xx} non-2xx responses`);
  return { rps: parsed.rps, p50: parsed.p50, p99: parsed.p99, requests: parsed.requests };
}

// --- CPU time ---------------------------------------------------------------

/** Clock ticks per second of /proc/<pid>/stat times. */
export const clockTicks = (() => {
  const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(result.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

interface ProcStat {
  ppid: number;
  /** utime + stime, in ticks. */
  own: number;
  /** cutime + cstime: children already reaped, in ticks. */
  reaped: number;
}

/** Fields of one /proc/<pid>/stat line (the command name may hold spaces and parentheses). */
export function parseProcStat(line: string): ProcStat {
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
  const n = (field: number) => Number(fields[field - 3] ?? 0);
  return { ppid: n(4), own: n(14) + n(15), reaped: n(16) + n(17) };
}

function readStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** `pid`'s live descendants, from a scan of /proc. */
function descendants(pid: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const child = Number(name);
    if (!Number.isInteger(child) || child === pid) continue;
    const stat = readStat(child);
    if (stat === null) continue;
    const list = byParent.get(stat.ppid);
    if (list === undefined) byParent.set(stat.ppid, [child]);
    else list.push(child);
  }
  const out: number[] = [];
  const queue = [...(byParent.get(pid) ?? [])];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    out.push(next);
    queue.push(...(byParent.get(next) ?? []));
  }
  return out;
}

/**
 * CPU seconds used so far by `pid` and every live descendant (plus the
 * children it already reaped), so a target that forks workers is measured
 * whole. Null where /proc is not there.
 */
export function treeCpuSeconds(pid: number): number | null {
  const top = readStat(pid);
  if (top === null) return null;
  let ticks = top.own + top.reaped;
  for (const child of descendants(pid)) ticks += readStat(child)?.own ?? 0;
  return ticks / clockTicks;
}

/** Resident memory of `pid` and its live descendants (VmRSS), in MiB; null where /proc is not there. */
export function treeRssMiB(pid: number): number | null {
  const rss = (p: number) => {
    try {
      return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      return null;
    }
  };
  const top = rss(pid);
  if (top === null) return null;
  return descendants(pid).reduce((kb, child) => kb + (rss(child) ?? 0), top) / 1024;
}

// --- pinning ----------------------------------------------------------------

/** Expands a CPU list such as `0-2,5` into its numbers. */
export function parseCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.trim().split(',')) {
    if (part === '') continue;
    const [from, to] = part.split('-').map(Number);
    if (from === undefined || !Number.isInteger(from)) continue;
    const last = to !== undefined && Number.isInteger(to) ? to : from;
    for (let cpu = from; cpu <= last; cpu++) out.push(cpu);
  }
  return out;
}

export interface Pinning {
  /** `taskset -c` list for each target process, or null when not pinning. */
  target: string | null;
  /** `taskset -c` list for the origin, the load generator and the runner, or null. */
  rest: string | null;
  /** One line for the report. */
  describe: string;
}

/** Targets on the first CPU this process may use, everything else on the others; none without taskset or a second CPU. */
export function planPinning(disabled: boolean): Pinning {
  if (disabled) return { target: null, rest: null, describe: 'pinning: off (BENCH_PIN=0)' };
  if (!has('taskset'))
    return {
      target: null,
      rest: null,
      describe: 'pinning: none (taskset not found); all processes share every CPU',
    };
  const result = spawnSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' });
  const cpus = parseCpuList(/:\s*([\d,\s-]+)$/.exec(result.stdout.trim())?.[1] ?? '');
  const [first, ...others] = cpus;
  if (first === undefined || others.length === 0)
    return { target: null, rest: null, describe: `pinning: none (only CPU ${cpus.join(',')} available)` };
  const rest = others.join(',');
  return {
    target: String(first),
    rest,
    describe: `pinning (taskset): each target process on CPU ${first} alone; origin, load generator and runner on CPU ${rest}`,
  };
}

/** Moves this process (all its threads), and so every child it starts later, onto `cpus`. */
export function pinSelf(cpus: string): void {
  const result = spawnSync('taskset', ['-a', '-pc', cpus, String(process.pid)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`taskset failed: ${result.stderr}`);
}

/**
 * Starts a node process (pinned to `cpu` when given), records it in `children` and resolves
 * once it prints its port.
 */
/** argv of a gateway started from `dir`/system.yaml and `dir`/gateway.yaml (the compiled build when fresh). */
export function gatewayArgv(dir: string): string[] {
  return [
    'bin/switchyard.js',
    '--system-config',
    join(dir, 'system.yaml'),
    '--gateway-config',
    join(dir, 'gateway.yaml'),
  ];
}

export function startNodeProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  cpu: string | null,
  children: ChildProcess[],
): Promise<{ pid: number; port: number }> {
  return new Promise((resolve, reject) => {
    // taskset execs node in place, so the pid we get is the measured process's.
    const [command, argv] =
      cpu === null ? [process.execPath, args] : ['taskset', ['-c', cpu, process.execPath, ...args]];
    const child = spawn(command, argv, {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    let ready = false;
    child.stdout?.on('data', (d: Buffer) => {
      if (ready) return; // keep draining the pipe, stop collecting
      out += d.toString();
      const m = /listening (\d+)/.exec(out) ?? /"port":(\d+)/.exec(out) ?? /port=(\d+)/.exec(out);
      if (m && child.pid !== undefined) {
        ready = true;
        resolve({ pid: child.pid, port: Number(m[1]) });
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

/** One process of a tree: its own CPU seconds and the times its main thread slept and was woken. */
export interface ProcessSample {
  pid: number;
  seconds: number;
  /** voluntary_ctxt_switches of the main thread: event-loop wake-ups, roughly. */
  wakeups: number;
}

/**
 * `pid` and each live descendant, separately (a cluster primary and its workers): CPU from
 * /proc/<pid>/stat, wake-ups from /proc/<pid>/status. Empty where /proc is not there.
 */
export function processSamples(pid: number): ProcessSample[] {
  const out: ProcessSample[] = [];
  for (const p of [pid, ...descendants(pid)]) {
    const stat = readStat(p);
    if (stat === null) continue;
    let wakeups = 0;
    try {
      wakeups = Number(
        /^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1],
      );
    } catch {
      // Exited between the two reads.
    }
    out.push({ pid: p, seconds: stat.own / clockTicks, wakeups });
  }
  return out;
}
