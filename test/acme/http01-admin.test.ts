import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../support/free-port.js';
import { skipWithoutPebble, startPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { handshake, PASSWORD, startAcmeGateway, USER, type AcmeGateway } from './harness.js';

const ADMIN_DOMAIN = 'admin.gw.test';

/** One HTTPS request to the admin listener, trusting `ca`, with SNI `ADMIN_DOMAIN`. */
function adminGet(port: number, path: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        servername: ADMIN_DOMAIN,
        ca,
        agent: false,
        headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe(
  'acme: HTTP-01 on the plain data plane, for the admin listener certificate',
  { skip: skipWithoutPebble() },
  () => {
    let pebble: PebbleServer;
    let gw: AcmeGateway | undefined;
    let root = '';
    const state = tempDir('switchyard-acme-http01-');

    before(async () => {
      // Pebble's HTTP-01 validator dials this port: the gateway's plain-HTTP data plane listens on it.
      pebble = await startPebble({ httpPort: await freePort() });
      root = await pebble.rootPem();
    });
    after(async () => {
      await gw?.stop();
      await pebble.stop();
      state.remove();
    });

    test('the admin listener gets a CA-issued certificate validated through /.well-known/acme-challenge on the data plane', async () => {
      gw = await startAcmeGateway(
        pebble.httpPort,
        `
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  challenge: http-01
  storage: { type: filesystem, dir: ${state.path} }
`,
        undefined,
        `tls: { acme: { domains: [${ADMIN_DOMAIN}] } }`,
      );
      const adminPort = Number(new URL(gw.admin.url).port);
      assert.match(gw.admin.url, /^https:/);
      await waitFor(
        async () => (await handshake(adminPort, { servername: ADMIN_DOMAIN, ca: root })).authorized,
        {
          timeoutMs: 60_000,
          what: 'the issued admin certificate',
        },
      );
      const served = await handshake(adminPort, { servername: ADMIN_DOMAIN, ca: root });
      assert.equal(served.cert.subjectaltname, `DNS:${ADMIN_DOMAIN}`);
      assert.match(String(served.cert.issuer.CN), /Pebble/);
      assert.equal((await adminGet(adminPort, '/readyz', root)).status, 200);
      const list = JSON.parse((await adminGet(adminPort, '/api/acme/certs', root)).body) as {
        certs: Record<string, unknown>[];
      };
      assert.equal(list.certs[0]?.id, ADMIN_DOMAIN);
      assert.equal(list.certs[0]?.state, 'issued');
      assert.equal(list.certs[0]?.serial, served.cert.serialNumber.toLowerCase());
      assert.deepEqual(pebble.issuedSerials(), [served.cert.serialNumber.toLowerCase()]);
    });

    test('challenge paths of no order in flight, and every other path, go to routing as before', async () => {
      assert.ok(gw);
      const base = `http://127.0.0.1:${gw.port}`;
      const unrouted = await fetch(`${base}/nothing-here`);
      const unknownToken = await fetch(`${base}/.well-known/acme-challenge/not-a-token`);
      assert.equal(unknownToken.status, unrouted.status);
      assert.equal(await unknownToken.text(), await unrouted.text());
      const hello = await fetch(`${base}/hello`);
      assert.deepEqual([hello.status, await hello.text()], [200, 'hello']);
    });
  },
);
