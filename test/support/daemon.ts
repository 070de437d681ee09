import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './free-port.js';
import { waitFor } from './wait.js';

export interface Daemon {
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then wait for the exit (nothing when it already exited). */
  stop(): Promise<void>;
}

export interface DaemonSpec {
  /** For messages: `etcd`, `slapd`. */
  name: string;
  /** Command line for one attempt, given freshly probed free ports. */
  command(ports: number[], attempt: number): { bin: string; args: string[] };
  /** How many free ports each attempt needs. */
  ports: number;
  /** True once the daemon serves on `ports`. */
  ready(ports: number[]): Promise<boolean>;
  timeoutMs?: number;
}

/**
 * Starts a system daemon on free loopback ports and waits until it is ready.
 * A port can be taken between probing and binding, so a failed start is
 * retried on new ports, three times at most.
 */
export async function startDaemon(spec: DaemonSpec): Promise<{ daemon: Daemon; ports: number[] }> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < spec.ports; i++) ports.push(await freePort());
    const { bin, args } = spec.command(ports, attempt);
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null)
            throw new Error(`${spec.name} exited (${child.exitCode}): ${output.slice(-2000)}`);
          return spec.ready(ports);
        },
        { timeoutMs: spec.timeoutMs ?? 10000, what: `${spec.name} on ports ${ports.join(', ')}` },
      );
    } catch (err) {
      if (child.exitCode === null) child.kill('SIGKILL');
      if (attempt >= 3) throw err;
      continue;
    }
    const daemon: Daemon = {
      child,
      output: () => output,
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      },
    };
    return { daemon, ports };
  }
}
