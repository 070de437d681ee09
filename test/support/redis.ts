import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import type { StoreConfig } from '../../src/config/gateway.js';
import type { ConfigIssue } from '../../src/config/schema-validate.js';
import { openStores, type StoreSet } from '../../src/stores/index.js';
import { freePort } from './free-port.js';
import { waitFor } from './wait.js';

const BINARY = process.env.REDIS_SERVER_BIN ?? 'redis-server';

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops the server (SIGTERM) and waits for it to exit; the port stays reserved for `start`. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty (nothing is persisted). */
  start(): Promise<void>;
  readonly running: boolean;
}

let available: boolean | undefined;

function binaryAvailable(): boolean {
  available ??= spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0;
  return available;
}

/**
 * `skip` option for suites that need Redis: a reason when the binary is
 * missing on a developer machine; `false` in CI, where `startRedis` then
 * fails the suite instead of hiding it.
 */
export function skipWithoutRedis(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  return binaryAvailable() ? false : `${BINARY} not found (install redis-server)`;
}

/** Answers PING with PONG within a short socket round trip. */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/**
 * Starts the system `redis-server` on a free loopback port with persistence
 * off (it writes nothing, so it runs in the system temp dir), and waits
 * until it answers PING. One per test file; always `stop()` it.
 */
export async function startRedis(): Promise<RedisServer> {
  if (!binaryAvailable()) throw new Error(`${BINARY} is required for this test and was not found`);
  let child: ChildProcess | undefined;
  let port = 0;
  let output = '';

  const launch = async (): Promise<void> => {
    const proc = spawn(
      BINARY,
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', tmpdir()],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child = proc;
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}): ${output}`);
        return pong(port);
      },
      { timeoutMs: 10000, what: `redis-server on port ${port}` },
    );
  };

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (err) {
      // Another process may have taken the port between probing and binding.
      if (child?.exitCode === null) child.kill('SIGKILL');
      if (attempt >= 3) throw err;
    }
  }

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGTERM');
    await exited;
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get running() {
      return child !== undefined;
    },
    async stop() {
      await stop();
    },
    async start() {
      if (child !== undefined) return;
      await launch();
    },
  };
}

/**
 * Stores resolved as the compiler would, for `pluginEnv({ stores })`:
 * `{ s: redis.url }` or full entries. Throws on a config problem; `release()` when done.
 */
export function testStores(entries: Record<string, string | Omit<StoreConfig, 'name'>>): StoreSet {
  const issues: ConfigIssue[] = [];
  const set = openStores(
    Object.entries(entries).map(([name, e]) =>
      typeof e === 'string' ? { name, type: 'redis', url: e } : { name, ...e },
    ),
    { env: {} },
    issues,
  );
  if (issues.length > 0) {
    set.release();
    throw new Error(`store config rejected: ${JSON.stringify(issues)}`);
  }
  return set;
}
