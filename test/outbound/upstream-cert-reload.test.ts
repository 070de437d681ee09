import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { copyFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { createAuthority, type Authority, type CertPair } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const dir = tempDir('switchyard-upstream-cert-');
let ca: Authority;
let first: CertPair;
let second: CertPair;
let origin: Server;
let gw: RunningGateway;
let connections = 0;
const liveCert = () => join(dir.path, 'client-live.crt');
const liveKey = () => join(dir.path, 'client-live.key');

before(async () => {
  ca = createAuthority(dir.path, 'ca');
  const server = ca.issue('origin', { dns: ['localhost'], ips: ['127.0.0.1'] });
  first = ca.issue('first', { cn: 'first-client', client: true });
  second = ca.issue('second', { cn: 'second-client', client: true });
  copyFileSync(first.cert, liveCert());
  copyFileSync(first.key, liveKey());
  // Requires a client certificate from the CA and answers with its CN.
  origin = createServer(
    { cert: server.certPem, key: server.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const cn = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`client=${cn}`);
    },
  );
  origin.on('secureConnection', () => connections++);
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const port = (origin.address() as AddressInfo).port;
  gw = await startGateway(`
routes:
  - { name: up, match: { path: /up }, policy: up }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config:
          targets: [{ host: 127.0.0.1, port: ${port} }]
          tls: true
          ca_cert_path: ${ca.cert}
          client_cert_path: ${liveCert()}
          client_key_path: ${liveKey()}
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`);
});

after(async () => {
  await gw?.stop();
  origin?.close();
  origin?.closeAllConnections();
  dir.remove();
});

async function get(): Promise<string> {
  const res = await fetch(`${gw.url}/up`);
  return `${res.status} ${await res.text()}`;
}

/** Cuts the gateway's pooled connections so the next request must open a new one. */
function dropUpstreamConnections(): void {
  origin.closeAllConnections();
}

test('upstream mTLS: replacing the client certificate and key files on disk makes new upstream connections present the new pair, without a reload', async () => {
  assert.equal(await get(), '200 client=first-client');
  // Replace both files (written aside, renamed over, as a certificate renewal tool does).
  writeFileSync(`${liveCert()}.new`, second.certPem);
  writeFileSync(`${liveKey()}.new`, second.keyPem);
  copyFileSync(`${liveKey()}.new`, liveKey());
  copyFileSync(`${liveCert()}.new`, liveCert());
  const before = connections;
  await waitFor(
    async () => {
      dropUpstreamConnections();
      return (await get()) === '200 client=second-client';
    },
    { what: 'the origin to see the new client certificate', intervalMs: 200 },
  );
  assert.ok(connections > before, 'the new pair came over a new connection');
});

test('upstream mTLS: a replaced pair that does not load (key of another certificate) is ignored; the last good pair stays', async () => {
  // The current pair is `second`; write first's certificate with second's key.
  writeFileSync(liveCert(), first.certPem);
  // Give the check interval time to pass twice; every answer must still come from a good pair.
  const until = Date.now() + 2500;
  while (Date.now() < until) {
    dropUpstreamConnections();
    assert.equal(await get(), '200 client=second-client');
  }
  // Completing the pair applies it.
  writeFileSync(liveKey(), first.keyPem);
  await waitFor(
    async () => {
      dropUpstreamConnections();
      return (await get()) === '200 client=first-client';
    },
    { what: 'the completed pair to apply', intervalMs: 200 },
  );
});
