import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { join } from 'node:path';
import { createAuthority } from './certs.js';
import { freePort } from './free-port.js';
import { tempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

const BINARY = process.env.PEBBLE_BIN ?? 'pebble';

/** EAB credentials Pebble accepts when started with `eab: true` (key id → base64url HMAC key). */
export const PEBBLE_EAB = {
  key_id: 'kid-1',
  hmac_key: 'zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W',
};

export interface PebbleServer {
  /** `https://127.0.0.1:<port>/dir` */
  readonly directoryUrl: string;
  /** CA bundle (PEM path) that signs Pebble's own HTTPS listener: `acme.directory_ca_path`. */
  readonly directoryCaPath: string;
  /** The port Pebble dials for TLS-ALPN-01: start the gateway's data plane on it. */
  readonly tlsPort: number;
  /** The port Pebble dials for HTTP-01 (plain HTTP). */
  readonly httpPort: number;
  /** Serials of the certificates Pebble issued so far (from its log), lowercase hex. */
  issuedSerials(): string[];
  /** The root that signs issued certificates (from the management interface; new on every start). */
  rootPem(): Promise<string>;
  stop(): Promise<void>;
}

let available: boolean | undefined;

function binaryAvailable(): boolean {
  // pebble has no --version; -h prints usage and exits 2, a missing binary fails to spawn.
  available ??= spawnSync(BINARY, ['-h'], { stdio: 'ignore' }).error === undefined;
  return available;
}

/** `skip` for Pebble suites: a reason outside CI when the binary is missing; `false` in CI, which then fails. */
export function skipWithoutPebble(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  return binaryAvailable() ? false : `${BINARY} not found (install the Debian package pebble)`;
}

/**
 * A DNS server on a UDP loopback port answering every A query with
 * 127.0.0.1 and every other query with an empty NOERROR, so Pebble's
 * validator dials the gateway for any test domain.
 */
async function startLoopbackDns(): Promise<{ port: number; close(): void }> {
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    if (query.length < 12) return;
    let offset = 12;
    while (offset < query.length && query[offset] !== 0) offset += (query[offset] as number) + 1;
    const questionEnd = offset + 5;
    if (questionEnd > query.length) return;
    const qtype = query.readUInt16BE(offset + 1);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(qtype === 1 ? 1 : 0, 6);
    const question = query.subarray(12, questionEnd);
    const answer =
      qtype === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
    socket.send(Buffer.concat([header, question, answer]), peer.port, peer.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { port: socket.address().port, close: () => socket.close() };
}

function fetchText(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { ca, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/**
 * Starts the system `pebble` (Let's Encrypt's test CA) on free loopback
 * ports with its own config in a temp dir: TLS-ALPN-01 validation dials
 * `tlsPort` on 127.0.0.1 (through an in-test DNS responder), nonces are never
 * rejected and validation does not sleep. `eab: true` requires external
 * account binding with PEBBLE_EAB. Always `stop()` it.
 */
export async function startPebble(
  options: {
    eab?: boolean;
    tlsPort?: number;
    httpPort?: number;
    /** `host:port` of the DNS server Pebble resolves with (pebble-challtestsrv for DNS-01); default an in-test A-only responder. */
    dnsServer?: string;
  } = {},
): Promise<PebbleServer> {
  if (!binaryAvailable()) throw new Error(`${BINARY} is required for this test and was not found`);
  const dir = tempDir('switchyard-pebble-');
  const authority = createAuthority(dir.path, 'pebble-ca');
  const leaf = authority.issue('pebble', { dns: ['localhost'], ips: ['127.0.0.1'] });
  const dns = options.dnsServer === undefined ? await startLoopbackDns() : undefined;
  const dnsServer = options.dnsServer ?? `127.0.0.1:${dns?.port ?? 0}`;
  const tlsPort = options.tlsPort ?? (await freePort());
  const httpPort = options.httpPort ?? (await freePort());
  let child: ChildProcess | undefined;
  let output = '';
  let acmePort = 0;
  let mgmtPort = 0;
  try {
    for (let attempt = 1; ; attempt++) {
      acmePort = await freePort();
      mgmtPort = await freePort();
      const config = {
        pebble: {
          listenAddress: `127.0.0.1:${acmePort}`,
          managementListenAddress: `127.0.0.1:${mgmtPort}`,
          certificate: leaf.cert,
          privateKey: leaf.key,
          httpPort,
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: options.eab === true,
          ...(options.eab === true
            ? { externalAccountMACKeys: { [PEBBLE_EAB.key_id]: PEBBLE_EAB.hmac_key } }
            : {}),
        },
      };
      const configPath = join(dir.path, 'pebble-config.json');
      writeFileSync(configPath, JSON.stringify(config));
      const proc = spawn(BINARY, ['-config', configPath, '-dnsserver', dnsServer], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
      });
      proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
      proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
      child = proc;
      try {
        await waitFor(
          async () => {
            if (proc.exitCode !== null) throw new Error(`pebble exited (${proc.exitCode}): ${output}`);
            try {
              return (await fetchText(`https://127.0.0.1:${acmePort}/dir`, authority.certPem)).status === 200;
            } catch {
              return false;
            }
          },
          { timeoutMs: 15000, intervalMs: 50, what: `pebble on port ${acmePort}` },
        );
        break;
      } catch (err) {
        // Another process may have taken a port between probing and binding.
        if (proc.exitCode === null) proc.kill('SIGKILL');
        if (attempt >= 3) throw err;
      }
    }
  } catch (err) {
    dns?.close();
    dir.remove();
    throw err;
  }
  const proc = child;
  return {
    directoryUrl: `https://127.0.0.1:${acmePort}/dir`,
    directoryCaPath: authority.cert,
    tlsPort,
    httpPort,
    issuedSerials() {
      return [...output.matchAll(/Issued certificate serial ([0-9a-f]+) for order/gi)].map((m) =>
        (m[1] as string).toLowerCase(),
      );
    },
    async rootPem() {
      const res = await fetchText(`https://127.0.0.1:${mgmtPort}/roots/0`, authority.certPem);
      if (res.status !== 200) throw new Error(`pebble /roots/0 answered ${res.status}`);
      return res.body;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = once(proc, 'exit');
        proc.kill('SIGTERM');
        await exited;
      }
      dns?.close();
      dir.remove();
    },
  };
}
