import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { test } from 'node:test';
import { basic, mockPolicyYaml } from '../admin/harness.js';
import { spawnedConfig, type SpawnedConfig } from '../admin/spawned.js';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { waitFor } from '../support/wait.js';

/**
 * Issue 38 item 5: SIGHUP, SIGUSR1, SIGTERM and SIGINT are handled from the first line of
 * bin/switchyard.js. A signal sent before the gateway listens is queued: a SIGHUP is applied (a
 * reload) once the start completes, a SIGTERM stops the process cleanly.
 */
const SYSTEM = [
  'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
  'logging: { level: info, format: json }',
  'timeouts: { shutdown_timeout_seconds: 2 }',
  // No file watch: only the SIGHUP can bring the second route.
  'config: { watch: false, persist: false }',
  'admin: { bind: 127.0.0.1, port: @ADMIN_PORT@, username: admin, password: "correct horse" }',
  '',
].join('\n');

const gatewayYaml = (routes: string[]) =>
  `routes:\n${routes.map((r) => `  - { name: ${r}, match: { path: /${r} }, policy: p }\n`).join('')}policies:${mockPolicyYaml('p', 'ok')}`;

/** Bit of SIGHUP (1) in /proc/<pid>/status `SigCgt`: set once a JS listener for it exists. */
function catches(pid: number, signal: number): boolean {
  try {
    const line = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line !== null && ((BigInt(`0x${line[1]}`) >> BigInt(signal - 1)) & 1n) === 1n;
  } catch {
    return false;
  }
}

const SIGHUP = 1;
const linux = process.platform === 'linux';

const exitedEarly = (p: GatewayProcess) =>
  p.child.exitCode !== null || p.child.signalCode !== null
    ? `the gateway exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.output()}`
    : undefined;

const acceptsNow = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** Resolves as soon as `port` accepts a connection; throws when the gateway exits first. */
const listening = (p: GatewayProcess, port: number) =>
  waitFor(
    async () => {
      const exited = exitedEarly(p);
      if (exited !== undefined) throw new Error(exited);
      return acceptsNow(port);
    },
    { timeoutMs: 60000, intervalMs: 10, what: `port ${port}` },
  );

/**
 * Waits until the process catches SIGHUP (bit 1 of /proc/<pid>/status SigCgt: a JS listener
 * exists), and fails if the data port answers first: the listener must exist from the first line
 * of bin/switchyard.js, long before anything listens (the bug: installed after the listeners).
 */
async function untilCaught(p: GatewayProcess, config: SpawnedConfig): Promise<void> {
  await waitFor(
    async () => {
      if (catches(p.child.pid!, SIGHUP)) return true;
      const exited = exitedEarly(p);
      if (exited !== undefined) throw new Error(exited);
      if (await acceptsNow(config.dataPort))
        throw new Error('the data port answered before the process caught SIGHUP');
      return false;
    },
    { timeoutMs: 30000, intervalMs: 2, what: 'a SIGHUP listener' },
  );
}

async function signalReloads(config: SpawnedConfig): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${config.adminPort}/metrics`, {
    headers: { authorization: basic() },
  });
  const line = /^gateway_config_reloads_total\{[^}]*source="signal"[^}]*result="success"[^}]*\} (\d+)/m.exec(
    await res.text(),
  );
  return line === null ? 0 : Number(line[1]);
}

test(
  'signals (issue 38 item 5): a SIGHUP sent right after spawn never kills the gateway; it reloads once started',
  { skip: !linux && 'reads /proc/<pid>/status' },
  async () => {
    const ROUNDS = 10;
    for (let round = 0; round < ROUNDS; round++) {
      const config = await spawnedConfig(SYSTEM, gatewayYaml(['a']));
      const p = spawnGateway(config.args);
      try {
        await untilCaught(p, config);
        // Even rounds signal while the modules still load, odd ones as soon as the data port answers
        // (the start-up window of the original bug: listening, and no SIGHUP listener yet; the
        // first file is read then, so only the reload can bring route /b: the watch is off).
        if (round % 2 === 1) await listening(p, config.dataPort);
        writeFileSync(config.gatewayPath, gatewayYaml(['a', 'b']));
        p.child.kill('SIGHUP');
        await listening(p, config.adminPort);
        await waitFor(
          async () => {
            const early = exitedEarly(p);
            if (early !== undefined) throw new Error(early);
            return (await fetch(`http://127.0.0.1:${config.dataPort}/b`)).status === 200;
          },
          { timeoutMs: 30000, what: `route /b after the SIGHUP of round ${round}` },
        );
        assert.equal((await fetch(`http://127.0.0.1:${config.dataPort}/a`)).status, 200);
        // The queued SIGHUP was applied as a reload (the count says so even when the first read
        // already saw the new file).
        await waitFor(async () => (await signalReloads(config)) >= 1, {
          timeoutMs: 30000,
          what: `a signal reload counted in round ${round}`,
        });
        assert.equal(exitedEarly(p), undefined, `round ${round}`);
      } finally {
        await p.stop('SIGKILL');
        config.remove();
      }
    }
  },
);

test(
  'signals (issue 38 item 5): a SIGTERM or SIGINT during start-up stops the gateway cleanly (exit 0, not killed)',
  { skip: !linux && 'reads /proc/<pid>/status' },
  async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const config = await spawnedConfig(SYSTEM, gatewayYaml(['a']));
      const p = spawnGateway(config.args);
      try {
        await untilCaught(p, config);
        p.child.kill(signal);
        const code = await p.exited;
        assert.equal(p.child.signalCode, null, `${signal} killed the process:\n${p.output()}`);
        assert.equal(code, 0, p.output());
        assert.match(p.output(), /"msg":"stopped"/);
      } finally {
        await p.stop('SIGKILL');
        config.remove();
      }
    }
  },
);
