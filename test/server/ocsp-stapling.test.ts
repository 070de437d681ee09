import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { join } from 'node:path';
import { pino } from 'pino';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import {
  caDatabase,
  createAuthority,
  issueWithOcsp,
  type Authority,
  type CaDatabase,
} from '../support/certs.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('switchyard-ocsp-');
let ca: Authority;
let db: CaDatabase;
let responderPort: number;
let responder: ChildProcess | undefined;

/** `openssl ocsp` answering from the CA's index on a loopback port, signing as the CA. */
async function startResponder(): Promise<void> {
  const child = spawn(
    'openssl',
    [
      'ocsp',
      '-index',
      db.index,
      '-port',
      String(responderPort),
      '-rsigner',
      ca.cert,
      '-rkey',
      ca.key,
      '-CA',
      ca.cert,
      '-ndays',
      '1',
    ],
    { cwd: dir.path, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  responder = child;
  // Writing the request is all this run does (it exits non-zero for want of a -url).
  const probeFile = join(dir.path, 'probe-request.der');
  spawnSync('openssl', ['ocsp', '-issuer', ca.cert, '-cert', ca.cert, '-no_nonce', '-reqout', probeFile], {
    cwd: dir.path,
    stdio: 'ignore',
  });
  const probe = readFileSync(probeFile);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`openssl ocsp exited: ${stderr}`);
      // A real request: `openssl ocsp` stalls on a connection that closes without one.
      try {
        const res = await fetch(`http://127.0.0.1:${responderPort}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/ocsp-request' },
          body: probe,
          signal: AbortSignal.timeout(2000),
        });
        await res.arrayBuffer();
        return res.ok;
      } catch {
        return false;
      }
    },
    { what: 'openssl ocsp listening' },
  );
}

/**
 * Restarts the responder on the same port so it answers from the index as it
 * is now (this openssl build does not pick up index changes while running).
 */
async function reloadResponder(): Promise<void> {
  const child = responder;
  if (child !== undefined && child.exitCode === null) {
    child.kill();
    await once(child, 'exit');
  }
  await startResponder();
}

before(async () => {
  ca = createAuthority(dir.path, 'ca');
  db = caDatabase(dir.path, ca);
  responderPort = await freePort();
  await startResponder();
});

after(() => {
  responder?.kill();
  dir.remove();
});

interface Handshake {
  /** The stapled response as `openssl ocsp` reads it (verified against the CA): good, revoked, unknown; `none` without one. */
  staple: string;
  subject: string;
}

/** A TLS handshake asking for a staple; the staple is checked with the system openssl. */
function handshake(port: number, certFile: string, servername = 'localhost'): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    let staple: Buffer | null = null;
    // `requestOCSP` is honoured by tls.connect though its typings only list it for new TLSSocket().
    const options: ConnectionOptions & { requestOCSP: boolean } = {
      host: '127.0.0.1',
      port,
      servername,
      ca: ca.certPem,
      requestOCSP: true,
    };
    const socket = tlsConnect(options);
    socket.on('OCSPResponse', (response: Buffer) => (staple = response));
    socket.once('error', reject);
    socket.once('secureConnect', () => {
      const subject = String(socket.getPeerCertificate().subject.CN);
      socket.end();
      if (staple === null) {
        resolve({ staple: 'none', subject });
        return;
      }
      const file = join(dir.path, `staple-${Date.now()}-${Math.random()}.der`);
      writeFileSync(file, staple);
      const out = execFileSync(
        'openssl',
        ['ocsp', '-respin', file, '-issuer', ca.cert, '-cert', certFile, '-CAfile', ca.cert],
        { cwd: dir.path, stdio: ['ignore', 'pipe', 'pipe'] },
      ).toString();
      const m = /: (good|revoked|unknown)\b/.exec(out);
      resolve({ staple: m?.[1] ?? `unparsed: ${out}`, subject });
    });
  });
}

function gatewayYaml(): string {
  return `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:
  - name: hello
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: hi, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;
}

async function withGateway(
  tls: string,
  fn: (gw: RunningGateway, lines: string[]) => Promise<void>,
): Promise<void> {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
  const gw = await startGateway(gatewayYaml(), {
    systemYaml: `listener: { bind: 127.0.0.1, port: 0 }\ntimeouts: { shutdown_timeout_seconds: 2 }\ntls:\n${tls}`,
    logger,
  });
  try {
    await fn(gw, lines);
  } finally {
    await gw.stop();
  }
}

test('ocsp stapling: a client that asks gets a staple saying good from the AIA responder; after revocation in the responder it says revoked without a restart', async () => {
  const server = issueWithOcsp(dir.path, ca, 'aia-server', {
    dns: ['localhost'],
    ips: ['127.0.0.1'],
    ocspUrl: `http://127.0.0.1:${responderPort}/`,
  });
  db.register(server.cert);
  await reloadResponder();
  const tls = `  cert_path: ${server.chain}\n  key_path: ${server.key}\n  ocsp_stapling: { enabled: true, refresh_seconds: 1 }\n`;
  await withGateway(tls, async (gw, lines) => {
    assert.deepEqual(await handshake(gw.port, server.cert), { staple: 'good', subject: 'localhost' });
    db.revoke(server.cert);
    await reloadResponder();
    let last: Handshake | undefined;
    await waitFor(
      async () => {
        last = await handshake(gw.port, server.cert);
        return last.staple === 'revoked';
      },
      { what: 'a revoked staple', intervalMs: 200, timeoutMs: 15000 },
    );
    assert.ok(
      lines.some((l) => l.includes('reports the served certificate revoked')),
      'revocation logged at WARN',
    );
  });
});

test('ocsp stapling: responder_url overrides the certificate AIA; an SNI certificate gets its own staple', async () => {
  const deadPort = await freePort();
  const main = issueWithOcsp(dir.path, ca, 'override-main', {
    dns: ['localhost'],
    ips: ['127.0.0.1'],
    ocspUrl: `http://127.0.0.1:${deadPort}/`,
  });
  const api = issueWithOcsp(dir.path, ca, 'override-api', {
    dns: ['api.test'],
    ocspUrl: `http://127.0.0.1:${deadPort}/`,
  });
  db.register(main.cert);
  db.register(api.cert);
  db.revoke(api.cert);
  await reloadResponder();
  const tls = [
    `  cert_path: ${main.chain}`,
    `  key_path: ${main.key}`,
    `  sni_certs: [{ server_name: api.test, cert_path: ${api.chain}, key_path: ${api.key} }]`,
    `  ocsp_stapling: { enabled: true, responder_url: "http://127.0.0.1:${responderPort}/" }`,
    '',
  ].join('\n');
  await withGateway(tls, async (gw) => {
    assert.deepEqual(await handshake(gw.port, main.cert, 'localhost'), {
      staple: 'good',
      subject: 'localhost',
    });
    assert.deepEqual(await handshake(gw.port, api.cert, 'api.test'), {
      staple: 'revoked',
      subject: 'api.test',
    });
  });
});

test('ocsp stapling: an unreachable responder or a certificate file without its issuer never fails the handshake: no staple, a WARN naming tls.ocsp_stapling', async () => {
  const deadPort = await freePort();
  const unreachable = issueWithOcsp(dir.path, ca, 'dead-responder', {
    dns: ['localhost'],
    ips: ['127.0.0.1'],
    ocspUrl: `http://127.0.0.1:${deadPort}/`,
  });
  await withGateway(
    `  cert_path: ${unreachable.chain}\n  key_path: ${unreachable.key}\n  ocsp_stapling: { enabled: true }\n`,
    async (gw, lines) => {
      assert.deepEqual(await handshake(gw.port, unreachable.cert), { staple: 'none', subject: 'localhost' });
      const warn = lines.find((l) => l.includes('OCSP response fetch failed'));
      assert.ok(warn, 'the failed fetch is logged');
      assert.equal((JSON.parse(warn) as { key: string; level: number }).key, 'tls.ocsp_stapling');
    },
  );
  // The leaf alone in cert_path: no issuer to build the request with.
  const leafOnly = issueWithOcsp(dir.path, ca, 'leaf-only', {
    dns: ['localhost'],
    ips: ['127.0.0.1'],
    ocspUrl: `http://127.0.0.1:${responderPort}/`,
  });
  db.register(leafOnly.cert);
  await withGateway(
    `  cert_path: ${leafOnly.cert}\n  key_path: ${leafOnly.key}\n  ocsp_stapling: { enabled: true }\n`,
    async (gw, lines) => {
      assert.deepEqual(await handshake(gw.port, leafOnly.cert), { staple: 'none', subject: 'localhost' });
      assert.ok(lines.some((l) => l.includes('its issuer is not in the certificate file')));
    },
  );
});

test('ocsp stapling off (the default): no staple even for a client that asks', async () => {
  const server = issueWithOcsp(dir.path, ca, 'off-server', {
    dns: ['localhost'],
    ips: ['127.0.0.1'],
    ocspUrl: `http://127.0.0.1:${responderPort}/`,
  });
  db.register(server.cert);
  await withGateway(`  cert_path: ${server.chain}\n  key_path: ${server.key}\n`, async (gw) => {
    assert.deepEqual(await handshake(gw.port, server.cert), { staple: 'none', subject: 'localhost' });
  });
  assert.ok(responder !== undefined && responder.exitCode === null, 'the responder was up all along');
});
