import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PEBBLE_EAB, startPebble, skipWithoutPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { DOMAIN, handshake, startAcmeGateway, type AcmeGateway } from './harness.js';

describe('acme: external account binding (Pebble requiring EAB)', { skip: skipWithoutPebble() }, () => {
  let pebble: PebbleServer;
  const state = tempDir('switchyard-acme-eab-');

  const systemYaml = (dir: string, eab: string) => `
tls:
  acme: { domains: [${DOMAIN}] }
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  ${eab}
  storage: { type: filesystem, dir: ${dir} }
`;
  const certOf = async (gw: AcmeGateway) =>
    ((await gw.call('GET', '/api/acme/certs')).body.certs as Record<string, unknown>[])[0];

  before(async () => {
    pebble = await startPebble({ eab: true });
  });
  after(async () => {
    await pebble.stop();
    state.remove();
  });

  test('without eab the CA refuses the account: failed with the reason, placeholder kept, /readyz 503', async () => {
    const gw = await startAcmeGateway(pebble.tlsPort, systemYaml(`${state.path}/no-eab`, ''));
    try {
      await waitFor(async () => (await certOf(gw))?.state === 'failed', { timeoutMs: 30_000 });
      const cert = await certOf(gw);
      assert.match(String(cert?.last_error), /externalAccountBinding/);
      assert.equal(cert?.placeholder, true);
      assert.equal((await fetch(`${gw.admin.url}/readyz`)).status, 503);
    } finally {
      await gw.stop();
    }
  });

  test('with the CA-issued eab key id and HMAC key the certificate is issued', async () => {
    const gw = await startAcmeGateway(
      pebble.tlsPort,
      systemYaml(
        `${state.path}/eab`,
        `eab: { key_id: ${PEBBLE_EAB.key_id}, hmac_key: ${PEBBLE_EAB.hmac_key} }`,
      ),
    );
    try {
      await waitFor(async () => (await fetch(`${gw.admin.url}/readyz`)).status === 200, {
        timeoutMs: 60_000,
        what: 'issuance with EAB',
      });
      const served = await handshake(gw.port, { ca: await pebble.rootPem() });
      assert.equal(served.authorized, true, served.authorizationError);
      // Published (and ready) a moment before the order releases its lease and leaves 'renewing'.
      await waitFor(async () => (await certOf(gw))?.state === 'issued', { what: "state 'issued'" });
    } finally {
      await gw.stop();
    }
  });
});
