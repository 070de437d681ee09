/**
 * `node --import tsx bench/ab.ts`: CPU per request of the gateway's one-node
 * policy (by default the lean front with each HTTP/1.1 upstream client) against the minimal proxy, interleaved in
 * short runs so that load from other processes on a shared machine hits every
 * target alike. Each round runs every target once for AB_SECONDS (default 2)
 * in rotated order; the report gives, per body, the median CPU µs/request and
 * the median of the per-round ratios minimal ÷ target (> 1: the target needs
 * less CPU per request than the minimal proxy). Pinned like `npm run bench`.
 *
 * Environment: AB_ROUNDS (default 15), AB_SECONDS (2), AB_CONNECTIONS (50), AB_GATEWAYS (comma list of
 * `front/client` pairs: `listener.http1_server` / `upstream.http1_client`; default `lean/lean,lean/undici`).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, pinSelf, planPinning, treeCpuSeconds, startNodeProcess } from './measure.js';
import { peerPath, type Payload } from './scenarios.js';

const rounds = Number(process.env.AB_ROUNDS ?? 15);
const seconds = Number(process.env.AB_SECONDS ?? 2);
const connections = Number(process.env.AB_CONNECTIONS ?? 50);
const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const start = (args: string[], env: NodeJS.ProcessEnv, cpu: string | null) =>
  startNodeProcess(args, env, cpu, children);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const pinning = planPinning(false);
  if (pinning.rest !== null) pinSelf(pinning.rest);
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-ab-'));
  try {
    const origin = await start(['--import', 'tsx', 'bench/origin.ts'], {}, null);
    const minimal = await start(
      ['--import', 'tsx', 'bench/minimal-proxy.ts'],
      { UPSTREAM_PORT: String(origin.port) },
      pinning.target,
    );
    const gateway = async (front: string, client: string) => {
      const system = join(dir, `${front}-${client}-system.yaml`);
      const routes = join(dir, 'gateway.yaml');
      writeFileSync(
        system,
        `listener: { bind: 127.0.0.1, port: 0, http1_server: ${front} }\nupstream: { http1_client: ${client} }\n` +
          'logging: { level: info, format: json }\n',
      );
      const up = `{ id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }`;
      writeFileSync(
        routes,
        `routes:\n  - { name: bench, match: { path: /* }, policy: p }\npolicies:\n  - name: p\n    nodes:\n` +
          `      - { id: in, type: listener }\n      - ${up}\n      - { id: out, type: client }\n` +
          `    edges:\n      - { from: in.out, to: up.in }\n      - { from: up.success, to: out.in }\n`,
      );
      return start(
        ['bin/switchyard.js', '--system-config', system, '--gateway-config', routes],
        {},
        pinning.target,
      );
    };
    const targets = [{ name: 'minimal proxy', ...minimal }];
    for (const pair of (process.env.AB_GATEWAYS ?? 'lean/lean,lean/undici').split(',')) {
      const [front = 'lean', client = 'lean'] = pair.trim().split('/');
      targets.push({
        name: `switchyard one-node, ${front} front, ${client} client`,
        ...(await gateway(front, client)),
      });
    }
    const payloads: Payload[] = ['hello', '16k'];
    const cpu = new Map<string, number[]>();
    const run = async (t: (typeof targets)[number], payload: Payload) => {
      const before = treeCpuSeconds(t.pid);
      const sample = await load(
        {
          url: `http://127.0.0.1:${t.port}${peerPath[payload]}`,
          headers: {},
          http2: false,
          seconds,
          connections,
          threads: 1,
        },
        (c) => children.push(c),
      );
      const after = treeCpuSeconds(t.pid);
      return before === null || after === null || sample.requests === 0
        ? NaN
        : ((after - before) * 1e6) / sample.requests;
    };
    for (const t of targets) for (const p of payloads) await run(t, p); // warm-up
    const ratios = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (const payload of payloads) {
        const got = new Map<string, number>();
        for (let i = 0; i < targets.length; i++) {
          const t = targets[(i + round) % targets.length]!;
          const us = await run(t, payload);
          got.set(t.name, us);
          const key = `${t.name}|${payload}`;
          cpu.set(key, [...(cpu.get(key) ?? []), us]);
        }
        const base = got.get('minimal proxy')!;
        for (const [name, us] of got) {
          const key = `${name}|${payload}`;
          ratios.set(key, [...(ratios.get(key) ?? []), base / us]);
        }
      }
    }
    console.log(
      `\nA/B CPU per request — ${new Date().toISOString()}, ${rounds} rounds × ${seconds}s per target and body, ${connections} connections; ${pinning.describe}`,
    );
    console.log('| target | body | CPU µs/req (median) | minimal ÷ target (median of per-round ratios) |');
    console.log('|---|---|---|---|');
    for (const t of targets)
      for (const p of payloads) {
        const key = `${t.name}|${p}`;
        console.log(
          `| ${t.name} | ${p === 'hello' ? '42 B' : '16 KiB'} | ${median(cpu.get(key)!).toFixed(1)} | ${median(ratios.get(key)!).toFixed(2)}× |`,
        );
      }
  } finally {
    children.forEach((c) => c.kill('SIGTERM'));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
