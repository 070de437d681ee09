import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promises as dnsPromises } from 'node:dns';
import { freePort } from './free-port.js';
import { tempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

/** One SRV record: `--srv-host=<name>,<target>,<port>,<priority>,<weight>`. */
export interface SrvRecord {
  name: string;
  target: string;
  port: number;
  priority: number;
  weight: number;
}

/** The records a dnsmasq serves: A/AAAA by name, SRV records. Names end in `.test`. */
export interface DnsRecords {
  hosts: Record<string, string[]>;
  srv: SrvRecord[];
}

export interface Dnsmasq {
  /** `127.0.0.1:<port>`, for `resolvers:`. */
  readonly server: string;
  readonly port: number;
  /**
   * Serves `records` from now on: hosts files are re-read on SIGHUP, SRV records only at start,
   * so a changed SRV set restarts dnsmasq on the same port. Resolves once it answers the new set.
   */
  set(records: DnsRecords): Promise<void>;
  /** Stops it: the port is dead (queries are refused) until `set` starts it again. */
  kill(): Promise<void>;
  stop(): Promise<void>;
  output(): string;
}

const BIN_CANDIDATES = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'];

function dnsmasqBin(): string | undefined {
  const found = BIN_CANDIDATES.find((p) => existsSync(p));
  if (found !== undefined) return found;
  const which = spawnSync('sh', ['-c', 'command -v dnsmasq'], { encoding: 'utf8' });
  const path = which.stdout.trim();
  return which.status === 0 && path !== '' ? path : undefined;
}

/** `skip` for suites needing dnsmasq: a reason outside CI when it is missing; false in CI, which then fails. */
export function dnsmasqSkip(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  return dnsmasqBin() === undefined ? 'dnsmasq is not installed (npm run setup installs it)' : false;
}

/**
 * Starts dnsmasq on 127.0.0.1:<random port>, authoritative for `.test` (a missing name is
 * NXDOMAIN, a missing type NODATA), forwarding nothing, with a 1 s TTL on every answer.
 */
export async function startDnsmasq(initial: DnsRecords): Promise<Dnsmasq> {
  const bin = dnsmasqBin();
  if (bin === undefined) throw new Error('dnsmasq is required here but not installed (npm run setup)');
  const dir = tempDir('switchyard-dnsmasq-');
  const hostsFile = join(dir.path, 'hosts');
  let records = initial;
  let child: ChildProcess | null = null;
  let output = '';
  let port = 0;

  const writeHosts = () =>
    writeFileSync(
      hostsFile,
      Object.entries(records.hosts)
        .flatMap(([name, ips]) => ips.map((ip) => `${ip} ${name}`))
        .join('\n') + '\n',
    );
  const args = () => [
    '--no-daemon',
    `--port=${port}`,
    '--listen-address=127.0.0.1',
    '--bind-interfaces',
    '--no-resolv',
    '--no-hosts',
    `--addn-hosts=${hostsFile}`,
    '--local=/test/',
    '--local-ttl=1',
    '--user=',
    '--pid-file=',
    '--conf-file=/dev/null',
    ...records.srv.map((r) => `--srv-host=${r.name},${r.target},${r.port},${r.priority},${r.weight}`),
  ];
  const answers = async (): Promise<boolean> => {
    const resolver = new dnsPromises.Resolver({ timeout: 300, tries: 1 });
    resolver.setServers([`127.0.0.1:${port}`]);
    try {
      for (const [name, ips] of Object.entries(records.hosts)) {
        const got = await resolver.resolve4(name).catch(() => [] as string[]);
        const want = ips.filter((ip) => !ip.includes(':'));
        if (want.length > 0 && got.sort().join() !== [...want].sort().join()) return false;
      }
      for (const name of new Set(records.srv.map((r) => r.name))) {
        const got = await resolver.resolveSrv(name).catch(() => []);
        if (got.length !== records.srv.filter((r) => r.name === name).length) return false;
      }
      // Up at all (an empty record set): a name outside the set is refused politely, not dropped.
      await resolver.resolve4('probe.test').catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOTFOUND' && err.code !== 'ENODATA') throw err;
      });
      return true;
    } catch {
      return false;
    } finally {
      resolver.cancel();
    }
  };
  const launch = async () => {
    const proc = spawn(bin, args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child = proc;
    await waitFor(
      async () => {
        if (proc.exitCode !== null)
          throw new Error(`dnsmasq exited (${proc.exitCode}): ${output.slice(-2000)}`);
        return answers();
      },
      { timeoutMs: 10000, what: `dnsmasq on 127.0.0.1:${port}` },
    );
  };
  const halt = async () => {
    const proc = child;
    child = null;
    if (proc === null || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGTERM');
    await exited;
  };

  writeHosts();
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (err) {
      await halt();
      if (attempt >= 3) throw err;
    }
  }
  let srvKey = JSON.stringify(records.srv);
  return {
    get server() {
      return `127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    async set(next) {
      records = next;
      writeHosts();
      const key = JSON.stringify(next.srv);
      if (child === null || key !== srvKey) {
        srvKey = key;
        await halt();
        await launch();
        return;
      }
      child.kill('SIGHUP');
      await waitFor(answers, { timeoutMs: 10000, what: 'dnsmasq to re-read its hosts file' });
    },
    kill: halt,
    async stop() {
      await halt();
      dir.remove();
    },
    output: () => output,
  };
}
