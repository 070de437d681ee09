import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
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
  const exited = once(child, 'exit').then(([code]) => code as number | null);
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
