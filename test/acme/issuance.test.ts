import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startPebble, skipWithoutPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { DOMAIN, handshake, PASSWORD, startAcmeGateway, USER, type AcmeGateway } from './harness.js';

function get(port: number, path: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, servername: DOMAIN, headers: { host: DOMAIN }, ca, agent: false },
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

describe('acme: issuance against Pebble (filesystem storage)', { skip: skipWithoutPebble() }, () => {
  let pebble: PebbleServer;
  const state = tempDir('switchyard-acme-');
  let root = '';
  let gw: AcmeGateway | undefined;
  let issuedSerial = '';
  /** The certificate's state as the Admin API reports it. */
  const certState = async (): Promise<unknown> =>
    ((await gw!.call('GET', '/api/acme/certs')).body.certs as Record<string, unknown>[])[0]?.state;

  const systemYaml = () => `
tls:
  acme: { domains: [${DOMAIN}] }
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  contact: ["mailto:ops@gw.test"]
  storage: { type: filesystem, dir: ${state.path} }
`;

  before(async () => {
    pebble = await startPebble();
    root = await pebble.rootPem();
  });
  after(async () => {
    await gw?.stop();
    await pebble.stop();
    state.remove();
  });

  test('E2E-ACME-02: placeholder and /readyz 503 until issued, then the issued certificate and 200', async () => {
    // Another "instance" holds the renewal lease: the gateway must not order and keeps its placeholder.
    const leases = join(state.path, 'leases');
    mkdirSync(leases, { recursive: true });
    const lock = join(leases, `${DOMAIN}.lock`);
    writeFileSync(lock, JSON.stringify({ owner: 'peer', expires_at: Date.now() + 600_000 }));

    gw = await startAcmeGateway(pebble.tlsPort, systemYaml());
    // Its first look found the lease taken and backed off.
    await waitFor(async () => {
      const certs = (await gw!.call('GET', '/api/acme/certs')).body.certs as Record<string, unknown>[];
      return certs[0]?.state === 'placeholder' && certs[0].last_attempt_at !== null;
    });
    const ready = await fetch(`${gw.admin.url}/readyz`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), {
      status: 'not_ready',
      reason: 'acme placeholder certs',
      acme: { placeholder: [DOMAIN] },
    });
    const before = await metricsText(gw.admin.url);
    assert.match(
      before,
      new RegExp(`^gateway_acme_cert_state\\{cert_id="${DOMAIN}",state="placeholder"\\} 1$`, 'm'),
    );
    assert.match(
      before,
      new RegExp(`^gateway_acme_cert_not_after_timestamp_seconds\\{cert_id="${DOMAIN}"\\} 0$`, 'm'),
    );
    const placeholder = await handshake(gw.port, { ca: root });
    assert.equal(placeholder.authorized, false, 'the placeholder is self-signed');
    assert.match(String(placeholder.cert.subject.O), /placeholder/);
    assert.equal(placeholder.alpn, 'h2', 'a normal client still negotiates h2');

    // The peer goes away; an operator asks for the certificate now.
    rmSync(lock);
    const renew = await gw.call('POST', `/api/acme/certs/${DOMAIN}/renew`);
    assert.deepEqual(renew, { status: 202, body: { scheduled: true } });
    await waitFor(async () => (await fetch(`${gw!.admin.url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      what: '/readyz 200 after issuance',
    });
    // The certificate serves as soon as it is published; the order ends a moment later (lease released).
    await waitFor(async () => (await certState()) === 'issued', {
      timeoutMs: 60_000,
      what: 'the order to end',
    });

    const issued = await handshake(gw.port, { ca: root });
    assert.equal(issued.authorized, true, issued.authorizationError);
    assert.equal(issued.cert.subjectaltname, `DNS:${DOMAIN}`);
    assert.match(String(issued.cert.issuer.CN), /Pebble/);
    assert.deepEqual(await get(gw.port, '/hello', root), { status: 200, body: 'hello' });
    const after = await metricsText(gw.admin.url);
    assert.match(
      after,
      new RegExp(`^gateway_acme_cert_state\\{cert_id="${DOMAIN}",state="issued"\\} 1$`, 'm'),
    );
    assert.match(
      after,
      new RegExp(`^gateway_acme_renewals_total\\{cert_id="${DOMAIN}",result="success"\\} 1$`, 'm'),
    );
    const notAfter = Number(
      new RegExp(`^gateway_acme_cert_not_after_timestamp_seconds\\{cert_id="${DOMAIN}"\\} (\\d+)$`, 'm').exec(
        after,
      )?.[1],
    );
    assert.equal(notAfter, Math.floor(new Date(issued.cert.valid_to).getTime() / 1000));

    const list = await gw.call('GET', '/api/acme/certs');
    const certs = list.body.certs as Record<string, unknown>[];
    assert.equal(list.body.enabled, true);
    assert.equal(list.body.storage, 'filesystem');
    assert.equal(certs.length, 1);
    assert.equal(certs[0]?.id, DOMAIN);
    assert.equal(certs[0]?.state, 'issued');
    assert.equal(certs[0]?.serial, issued.cert.serialNumber.toLowerCase());
    assert.ok(!JSON.stringify(list.body).includes('PRIVATE KEY'), 'no key in the Admin API');
    issuedSerial = issued.cert.serialNumber;

    // Stored: key 0600, written atomically beside the chain.
    const keyFile = join(state.path, 'certs', DOMAIN, 'key.pem');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.ok(existsSync(join(state.path, 'certs', DOMAIN, 'chain.pem')));
    assert.equal(statSync(join(state.path, 'account.json')).mode & 0o777, 0o600);
  });

  test('a validator offering only acme-tls/1 with no pending challenge is refused', async () => {
    assert.ok(gw);
    await assert.rejects(handshake(gw.port, { alpn: ['acme-tls/1'] }));
  });

  test('renew answers not_due for a fresh certificate, 404 for an unknown id, and force re-issues live', async () => {
    assert.ok(gw);
    assert.deepEqual(await gw.call('POST', `/api/acme/certs/${DOMAIN}/renew`), {
      status: 200,
      body: { scheduled: false, reason: 'not_due' },
    });
    assert.equal((await gw.call('POST', '/api/acme/certs/other.test/renew')).status, 404);
    assert.deepEqual(await gw.call('POST', `/api/acme/certs/${DOMAIN}/renew?force=true`), {
      status: 202,
      body: { scheduled: true },
    });
    assert.deepEqual(await gw.call('POST', `/api/acme/certs/${DOMAIN}/renew?force=true`), {
      status: 409,
      body: { error: 'in_progress' },
    });
    await waitFor(async () => (await handshake(gw!.port, { ca: root })).cert.serialNumber !== issuedSerial, {
      timeoutMs: 60_000,
      what: 'the renewed certificate on the same listener',
    });
    await waitFor(async () => (await certState()) === 'issued', {
      timeoutMs: 60_000,
      what: 'the renewal to end',
    });
    const renewed = await handshake(gw.port, { ca: root });
    assert.equal(renewed.authorized, true);
    issuedSerial = renewed.cert.serialNumber;
    assert.equal((await fetch(`${gw.admin.url}/readyz`)).status, 200);
  });

  test('a restart reuses the stored certificate without a new order', async () => {
    await gw?.stop();
    gw = await startAcmeGateway(pebble.tlsPort, systemYaml());
    const ready = await fetch(`${gw.admin.url}/readyz`);
    assert.equal(ready.status, 200, 'ready at once: no placeholder');
    const served = await handshake(gw.port, { ca: root });
    assert.equal(served.authorized, true);
    assert.equal(served.cert.serialNumber, issuedSerial);
    const certs = (await gw.call('GET', '/api/acme/certs')).body.certs as Record<string, unknown>[];
    assert.equal(certs[0]?.state, 'issued');
    assert.equal(certs[0]?.last_attempt_at, null, 'no order was placed');
  });
});

/** The admin listener's Prometheus text. */
async function metricsText(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`, {
    headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` },
  });
  assert.equal(res.status, 200);
  return res.text();
}
