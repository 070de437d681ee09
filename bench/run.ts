/**
 * `npm run bench`: the gateway against a minimal node:http + undici proxy, in
 * the same run, on the same origin, with the same load, interleaved over
 * several rounds. Prints requests/s, p50, p99 and the ratio to the reference.
 *
 * Environment: BENCH_SECONDS (per run, default 5), BENCH_ROUNDS (default 2),
 * BENCH_CONNECTIONS (default 64), BENCH_SCENARIOS (comma list to run a subset).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis, type RedisServer } from '../test/support/redis.js';
import { scenarios, type Scenario } from './scenarios.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const only = process.env.BENCH_SCENARIOS?.split(',').map((s) => s.trim());

interface Sample {
  rps: number;
  p50: number;
  p99: number;
}

const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function startProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out) ?? /"port":(\d+)/.exec(out) ?? /port=(\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

function has(tool: string): boolean {
  return spawnSync(tool, ['--version']).error === undefined;
}

const hasWrk = () => has('wrk');

/** Parses h2load's summary into requests/s and latency percentiles (ms; h2load reports mean and sd, not p50/p99). */
function parseH2load(text: string): Sample {
  const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(text)?.[1] ?? 0);
  const failed = Number(/(\d+) failed/.exec(text)?.[1] ?? 0);
  if (failed > 0) throw new Error(`h2load saw ${failed} failed requests:\n${text}`);
  const row = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(text);
  const toMs = (v: string | undefined, unit: string | undefined) =>
    Number(v ?? 0) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);
  return { rps, p50: toMs(row?.[5], row?.[6]), p99: toMs(row?.[3], row?.[4]) };
}

/** Parses wrk's `--latency` output into requests/s and latency percentiles (ms). */
function parseWrk(text: string): Sample {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? 0);
  const toMs = (v: string | undefined, unit: string | undefined) =>
    Number(v ?? 0) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);
  const p50 = /50%\s+([\d.]+)(us|ms|s)/.exec(text);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  if (errors) throw new Error(`load run saw ${errors[1]} non-2xx responses:\n${text}`);
  return { rps, p50: toMs(p50?.[1], p50?.[2]), p99: toMs(p99?.[1], p99?.[2]) };
}

function load(url: string, headers: Record<string, string> = {}, http2 = false): Sample {
  const headerArgs = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  if (http2) {
    const result = spawnSync(
      'h2load',
      ['-c', String(Math.min(connections, 16)), '-m', '16', '-D', String(seconds), ...headerArgs, url],
      { encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr}${result.stdout}`);
    return parseH2load(result.stdout);
  }
  if (hasWrk()) {
    const threads = Math.max(1, Math.min(2, cpus().length));
    const result = spawnSync(
      'wrk',
      [
        '-t',
        String(threads),
        '-c',
        String(connections),
        '-d',
        `${seconds}s`,
        '--latency',
        ...headerArgs,
        url,
      ],
      { encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr}`);
    return parseWrk(result.stdout);
  }
  // Fallback: autocannon in its own process so it does not share the event loop with anything measured.
  const script = `import ac from 'autocannon';const r=await ac({url:${JSON.stringify(url)},headers:${JSON.stringify(headers)},connections:${connections},duration:${seconds}});process.stdout.write(JSON.stringify({rps:r.requests.average,p50:r.latency.p50,p99:r.latency.p99,non2xx:r.non2xx}))`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  const parsed = JSON.parse(result.stdout) as Sample & { non2xx: number };
  if (parsed.non2xx > 0) throw new Error(`load run saw ${parsed.non2xx} non-2xx responses`);
  return parsed;
}

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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  let redis: RedisServer | undefined;
  try {
    const origin = await startProcess(['--import', 'tsx', 'bench/origin.ts'], {});
    const reference = await startProcess(['--import', 'tsx', 'bench/reference-proxy.ts'], {
      UPSTREAM_PORT: String(origin.port),
    });
    const selected = scenarios.filter(
      (s) => (only === undefined || only.includes(s.name)) && (s.http2 !== true || has('h2load')),
    );
    const skipped = scenarios.filter((s) => s.http2 === true && !has('h2load')).map((s) => s.name);
    if (skipped.length > 0)
      console.log(`skipping ${skipped.join(', ')}: h2load (nghttp2-client) is not installed`);
    // Only a scenario that counts in a store pays for a redis-server.
    if (selected.some((s) => s.needsRedis === true)) redis = await startRedis();
    let tlsFiles: { cert: string; key: string } | undefined;
    if (selected.some((s) => s.tls === true)) tlsFiles = selfSigned(dir);
    const targets: { name: string; url: string; scenario?: Scenario }[] = [
      { name: 'reference (node:http + undici)', url: `http://127.0.0.1:${reference.port}/bench` },
    ];
    for (const scenario of selected) {
      const system = join(dir, `${scenario.name}-system.yaml`);
      const gateway = join(dir, `${scenario.name}-gateway.yaml`);
      const tls =
        scenario.tls === true && tlsFiles !== undefined
          ? `tls: { cert_path: ${tlsFiles.cert}, key_path: ${tlsFiles.key} }\n`
          : '';
      writeFileSync(
        system,
        `listener: { bind: 127.0.0.1, port: 0 }\nlogging: { level: info, format: json }\n${tls}${scenario.systemYaml ?? ''}`,
      );
      writeFileSync(gateway, scenario.gatewayYaml(origin.port, redis?.url));
      const gw = await startProcess(
        ['bin/switchyard.js', '--system-config', system, '--gateway-config', gateway],
        {
          LOG_LEVEL: 'info',
        },
      );
      const scheme = scenario.tls === true ? 'https' : 'http';
      targets.push({
        name: scenario.title,
        url: `${scheme}://127.0.0.1:${gw.port}${scenario.path}`,
        scenario,
      });
    }
    // Warm-up so the JIT and keep-alive pools are hot before anything is measured.
    const run = (t: (typeof targets)[number]) => load(t.url, t.scenario?.headers, t.scenario?.http2 === true);
    for (const t of targets) run(t);
    const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const t of targets) samples.get(t.name)?.push(run(t));
    }
    const ref = median(samples.get(targets[0]?.name ?? '')?.map((s) => s.rps) ?? []);
    const rows = targets.map((t) => {
      const s = samples.get(t.name) ?? [];
      const rps = median(s.map((x) => x.rps));
      return {
        target: t.name,
        'req/s': Math.round(rps),
        'p50 ms': median(s.map((x) => x.p50)).toFixed(2),
        'p99 ms': median(s.map((x) => x.p99)).toFixed(2),
        'vs reference': (rps / ref).toFixed(3),
      };
    });
    console.log(
      `\nSwitchyard benchmark — ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ` +
        `${rounds} rounds × ${seconds}s, ${connections} connections, load by ${hasWrk() ? 'wrk' : 'autocannon'}; medians\n`,
    );
    console.table(rows);
  } finally {
    children.forEach((c) => c.kill('SIGTERM'));
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
