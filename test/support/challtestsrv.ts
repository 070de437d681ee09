import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './free-port.js';
import { waitFor } from './wait.js';

const BINARY = process.env.CHALLTESTSRV_BIN ?? 'pebble-challtestsrv';

let available: boolean | undefined;

/** `skip` for suites needing pebble-challtestsrv (shipped by the Debian pebble package); false in CI. */
export function skipWithoutChalltestsrv(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  available ??= spawnSync(BINARY, ['-h'], { stdio: 'ignore' }).error === undefined;
  return available ? false : `${BINARY} not found (install the Debian package pebble)`;
}

export interface ChallTestServer {
  /** `127.0.0.1:<port>`: give it to Pebble as `-dnsserver`. */
  readonly dnsAddress: string;
  /** `http://127.0.0.1:<port>`: the management API (`/set-txt`, `/clear-txt`, ...). */
  readonly managementUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts Pebble's challenge test server as a mock DNS server only: A queries
 * answer 127.0.0.1, AAAA none, and TXT records are whatever `/set-txt` put
 * there (a DNS-01 hook calls it). Always `stop()` it.
 */
export async function startChallTestSrv(): Promise<ChallTestServer> {
  for (let attempt = 1; ; attempt++) {
    const dnsPort = await freePort();
    const mgmtPort = await freePort();
    let output = '';
    const child: ChildProcess = spawn(
      BINARY,
      [
        '-dns01',
        `127.0.0.1:${dnsPort}`,
        '-management',
        `127.0.0.1:${mgmtPort}`,
        '-http01',
        '',
        '-https01',
        '',
        '-tlsalpn01',
        '',
        '-defaultIPv4',
        '127.0.0.1',
        '-defaultIPv6',
        '',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const managementUrl = `http://127.0.0.1:${mgmtPort}`;
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`${BINARY} exited (${child.exitCode}): ${output}`);
          try {
            // Any HTTP answer means the management listener is up.
            await fetch(`${managementUrl}/clear-txt`, { method: 'POST', body: '{"host":"probe.test."}' });
            return true;
          } catch {
            return false;
          }
        },
        { timeoutMs: 10_000, intervalMs: 50, what: `${BINARY} management on ${mgmtPort}` },
      );
    } catch (err) {
      if (child.exitCode === null) child.kill('SIGKILL');
      if (attempt >= 3) throw err;
      continue;
    }
    return {
      dnsAddress: `127.0.0.1:${dnsPort}`,
      managementUrl,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = once(child, 'exit');
          child.kill('SIGTERM');
          await exited;
        }
      },
    };
  }
}
