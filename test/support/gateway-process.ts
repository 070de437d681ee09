import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

export interface GatewayProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/** Spawns `switchyard` as a real process (the CLI users run). */
export function spawnGateway(args: string[], env: NodeJS.ProcessEnv = {}): GatewayProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': the exit can come before the last stderr/stdout bytes are read. A process
  // that left a child holding the pipes (a killed cluster primary) still counts as exited 2 s later.
  const exited = new Promise<number | null>((resolve) => {
    child.once('close', (code: number | null) => resolve(code));
    child.once('exit', (code: number | null) => setTimeout(() => resolve(code), 2000).unref());
  });
  return {
    child,
    output: () => out,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Polls `url` until it answers (any status) or the deadline passes. */
export async function waitForHttp(url: string, timeoutMs = 15000): Promise<void> {
  await waitFor(
    async () => {
      try {
        await fetch(url);
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs, what: `HTTP at ${url}` },
  );
}
