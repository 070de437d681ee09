import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { skipWithoutChalltestsrv, startChallTestSrv, type ChallTestServer } from '../support/challtestsrv.js';
import { createAuthority } from '../support/certs.js';
import { skipWithoutPebble, startPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { writeChalltestHook } from './challtest-hook.js';
import { handshake, startAcmeGateway, type AcmeGateway } from './harness.js';

/** Waits for `/readyz` 200; on timeout the error carries the certificates' states and last errors. */
async function waitReady(gw: AcmeGateway, what: string): Promise<void> {
  try {
    await waitFor(async () => (await fetch(`${gw.admin.url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 200,
      what,
    });
  } catch (err) {
    const certs = (await gw.call('GET', '/api/acme/certs')).body.certs;
    throw new Error(`${(err as Error).message}: ${JSON.stringify(certs)}`, { cause: err });
  }
}

const skip = skipWithoutPebble() || skipWithoutChalltestsrv();

describe('acme: DNS-01 through a hook (Pebble resolving with pebble-challtestsrv)', { skip }, () => {
  let dns: ChallTestServer;
  let pebble: PebbleServer;
  let root = '';
  const dir = tempDir('switchyard-acme-dns01-');
  const hookLog = join(dir.path, 'hook.log');
  let hookCommand = '';

  const systemYaml = (state: string, slots: string, hook: string, extra = '') => `
tls:
${slots}
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  challenge: dns-01
  dns_hook: ${hook}
  storage: { type: filesystem, dir: ${join(dir.path, state)} }
${extra}`;
  const certsOf = async (gw: AcmeGateway) =>
    (await gw.call('GET', '/api/acme/certs')).body.certs as Record<string, unknown>[];

  before(async () => {
    dns = await startChallTestSrv();
    hookCommand = writeChalltestHook(dir.path, dns.managementUrl, hookLog).join(', ');
    pebble = await startPebble({ dnsServer: dns.dnsAddress });
    root = await pebble.rootPem();
  });
  after(async () => {
    await pebble?.stop();
    await dns?.stop();
    dir.remove();
  });

  test('a wildcard certificate with an RSA key is issued through the exec hook and serves any name below it', async () => {
    const gw = await startAcmeGateway(
      0,
      systemYaml(
        'exec',
        `  acme: { domains: [wild.test, "*.wild.test"] }`,
        `{ type: exec, command: [${hookCommand}], timeout_seconds: 20 }`,
        '  key_type: rsa-2048',
      ),
    );
    try {
      await waitReady(gw, 'the wildcard certificate');
      for (const name of ['a.wild.test', 'other.wild.test', 'wild.test']) {
        const served = await handshake(gw.port, { servername: name, ca: root });
        assert.equal(served.authorized, true, `${name}: ${served.authorizationError}`);
        assert.equal(
          (served.cert.subjectaltname ?? '').split(', ').sort().join(', '),
          'DNS:*.wild.test, DNS:wild.test',
        );
        assert.equal(served.cert.bits, 2048, 'an RSA 2048-bit key');
        assert.ok(served.cert.modulus !== undefined && served.cert.asn1Curve === undefined, 'RSA, not EC');
      }
      // Both identifiers share `_acme-challenge.wild.test`: two records presented, cleaned up after the order.
      const calls = readFileSync(hookLog, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' '));
      const presents = calls.filter((c) => c[0] === 'present');
      assert.equal(presents.length, 2, JSON.stringify(calls));
      for (const c of presents) {
        assert.equal(c[1], 'wild.test');
        assert.equal(c[2], '_acme-challenge.wild.test');
        assert.match(c[3] ?? '', /^[A-Za-z0-9_-]{43}$/, 'base64url SHA-256 of the key authorization');
      }
      assert.equal(calls.filter((c) => c[0] === 'cleanup').length, 2);
      assert.ok(
        calls.findIndex((c) => c[0] === 'cleanup') > calls.findLastIndex((c) => c[0] === 'present'),
        'no record removed while the other may still be validated',
      );
    } finally {
      await gw.stop();
    }
  });

  test('a hook that exits non-zero fails the order with its exit code and output, placeholder kept', async () => {
    const failing = join(dir.path, 'failing.sh');
    writeFileSync(failing, '#!/bin/sh\necho "no credentials for the DNS API" >&2\nexit 3\n');
    chmodSync(failing, 0o755);
    const gw = await startAcmeGateway(
      0,
      systemYaml('failing', '  acme: { domains: [fail.test] }', `{ type: exec, command: [${failing}] }`),
    );
    try {
      await waitFor(async () => (await certsOf(gw))[0]?.state === 'failed', { timeoutMs: 30_000 });
      const cert = (await certsOf(gw))[0];
      assert.match(
        String(cert?.last_error),
        /acme\.dns_hook\.command present _acme-challenge\.fail\.test exited with 3/,
      );
      assert.match(String(cert?.last_error), /no credentials for the DNS API/);
      assert.equal(cert?.placeholder, true);
    } finally {
      await gw.stop();
    }
  });

  test('a hook that outlives timeout_seconds is killed and the order fails naming the key', async () => {
    const slow = join(dir.path, 'slow.sh');
    writeFileSync(slow, '#!/bin/sh\nexec sleep 30\n');
    chmodSync(slow, 0o755);
    const gw = await startAcmeGateway(
      0,
      systemYaml(
        'slow',
        '  acme: { domains: [slow.test] }',
        `{ type: exec, command: [${slow}], timeout_seconds: 1 }`,
      ),
    );
    try {
      await waitFor(async () => (await certsOf(gw))[0]?.state === 'failed', { timeoutMs: 30_000 });
      assert.match(
        String((await certsOf(gw))[0]?.last_error),
        /timed out after 1s \(acme\.dns_hook\.timeout_seconds\)/,
      );
    } finally {
      await gw.stop();
    }
  });

  describe('webhook', () => {
    let hookServer: Server;
    let hookUrl = '';
    let caPath = '';
    const received: { headers: Record<string, unknown>; body: Record<string, string> }[] = [];

    before(async () => {
      const ca = createAuthority(dir.path, 'webhook-ca');
      const leaf = ca.issue('webhook', { dns: ['localhost'], ips: ['127.0.0.1'] });
      caPath = ca.cert;
      // A DNS provider's API as a webhook: it publishes through challtestsrv.
      hookServer = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
        let text = '';
        req.setEncoding('utf8');
        req.on('data', (c: string) => (text += c));
        req.on('end', () => {
          const body = JSON.parse(text) as Record<string, string>;
          received.push({ headers: req.headers, body });
          const host = `${body.record_name}.`;
          const call =
            body.action === 'present'
              ? fetch(`${dns.managementUrl}/set-txt`, {
                  method: 'POST',
                  body: JSON.stringify({ host, value: body.value }),
                })
              : fetch(`${dns.managementUrl}/clear-txt`, { method: 'POST', body: JSON.stringify({ host }) });
          call.then(
            (r) => res.writeHead(r.ok ? 204 : 502).end(),
            () => res.writeHead(502).end(),
          );
        });
      });
      await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
      hookUrl = `https://127.0.0.1:${(hookServer.address() as AddressInfo).port}/dns`;
    });
    after(() => new Promise<void>((resolve) => hookServer.close(() => resolve())));

    test('a webhook whose certificate is not trusted is not called: the order fails on TLS verification', async () => {
      const gw = await startAcmeGateway(
        0,
        systemYaml(
          'untrusted',
          '  acme: { domains: [untrusted.test] }',
          `{ type: webhook, url: "${hookUrl}" }`,
        ),
      );
      try {
        await waitFor(async () => (await certsOf(gw))[0]?.state === 'failed', { timeoutMs: 30_000 });
        assert.match(String((await certsOf(gw))[0]?.last_error), /acme\.dns_hook\.url .*certificate/);
        assert.equal(received.length, 0);
      } finally {
        await gw.stop();
      }
    });

    test('a wildcard sni certificate is issued through the webhook (POST JSON over verified TLS, headers sent)', async () => {
      const gw = await startAcmeGateway(
        0,
        systemYaml(
          'webhook',
          `  acme: { domains: [gw.test], challenge: dns-01 }
  sni_certs:
    - server_name: "*.hook.test"
      acme: {}`,
          `{ type: webhook, url: "${hookUrl}", ca_path: ${caPath}, headers: { authorization: Bearer dns-api-token } }`,
        ),
      );
      try {
        await waitReady(gw, 'both certificates');
        const served = await handshake(gw.port, { servername: 'api.hook.test', ca: root });
        assert.equal(served.authorized, true, served.authorizationError);
        assert.equal(served.cert.subjectaltname, 'DNS:*.hook.test');
        assert.equal(served.cert.asn1Curve, 'prime256v1', 'the default key type is ECDSA P-256');
        const byDefault = await handshake(gw.port, { servername: 'gw.test', ca: root });
        assert.equal(byDefault.cert.subjectaltname, 'DNS:gw.test');
        const present = received.find((r) => r.body.record_name === '_acme-challenge.hook.test');
        assert.ok(present, JSON.stringify(received.map((r) => r.body)));
        assert.equal(present.headers['content-type'], 'application/json');
        assert.equal(present.headers.authorization, 'Bearer dns-api-token');
        assert.deepEqual(Object.keys(present.body).sort(), ['action', 'domain', 'record_name', 'value']);
        assert.equal(present.body.domain, 'hook.test');
        assert.deepEqual(received.map((r) => `${r.body.action} ${r.body.record_name}`).sort(), [
          'cleanup _acme-challenge.gw.test',
          'cleanup _acme-challenge.hook.test',
          'present _acme-challenge.gw.test',
          'present _acme-challenge.hook.test',
        ]);
      } finally {
        await gw.stop();
      }
    });
  });
});
