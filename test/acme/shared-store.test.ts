import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { skipWithoutChalltestsrv, startChallTestSrv, type ChallTestServer } from '../support/challtestsrv.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { skipWithoutPebble, startPebble, type PebbleServer } from '../support/pebble.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { writeChalltestHook } from './challtest-hook.js';
import { DOMAIN, handshake, HELLO_YAML, PASSWORD, USER } from './harness.js';

const AUTH = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

interface Instance {
  name: string;
  process: GatewayProcess;
  port: number;
  adminUrl: string;
}

const skip = skipWithoutPebble() || skipWithoutChalltestsrv() || skipWithoutRedis();

describe(
  'acme: two gateways sharing a Redis store order once and serve the same certificate',
  { skip },
  () => {
    let redis: RedisServer;
    let dns: ChallTestServer;
    let pebble: PebbleServer;
    let root = '';
    const dir = tempDir('switchyard-acme-shared-');
    const instances: Instance[] = [];

    const start = async (name: string, command: string): Promise<Instance> => {
      const port = await freePort();
      const adminPort = await freePort();
      const system = join(dir.path, `${name}-system.yaml`);
      writeFileSync(
        system,
        `
listener: { bind: 127.0.0.1, port: ${port} }
timeouts: { shutdown_timeout_seconds: 2 }
admin: { bind: 127.0.0.1, port: ${adminPort}, username: ${USER}, password: "${PASSWORD}" }
tls:
  acme: { domains: [${DOMAIN}] }
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  challenge: dns-01
  dns_hook: { type: exec, command: [${command}] }
  storage: { type: store, store: shared, encryption_key: "one key for both instances" }
`,
      );
      const gateway = join(dir.path, `${name}-gateway.yaml`);
      writeFileSync(
        gateway,
        `${HELLO_YAML}\nstores:\n  - { name: shared, type: redis, url: "${redis.url}" }\n`,
      );
      const process = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
      const instance = { name, process, port, adminUrl: `http://127.0.0.1:${adminPort}` };
      instances.push(instance);
      return instance;
    };
    const ready = (i: Instance) =>
      waitFor(
        async () => {
          if (i.process.child.exitCode !== null) throw new Error(`${i.name} exited: ${i.process.output()}`);
          try {
            return (await fetch(`${i.adminUrl}/readyz`)).status === 200;
          } catch {
            return false;
          }
        },
        { timeoutMs: 90_000, intervalMs: 200, what: `${i.name} ready with the issued certificate` },
      );
    const servedSerial = async (i: Instance) => {
      const served = await handshake(i.port, { ca: root });
      assert.equal(served.authorized, true, `${i.name}: ${served.authorizationError}`);
      return served.cert.serialNumber.toLowerCase();
    };
    const orders = async (i: Instance) => {
      const text = await (await fetch(`${i.adminUrl}/metrics`, { headers: { authorization: AUTH } })).text();
      const m = new RegExp(
        `^gateway_acme_renewals_total\\{cert_id="${DOMAIN}",result="success"\\} (\\d+)$`,
        'm',
      ).exec(text);
      return Number(m?.[1] ?? 'NaN');
    };

    before(async () => {
      redis = await startRedis();
      dns = await startChallTestSrv();
      pebble = await startPebble({ dnsServer: dns.dnsAddress });
      root = await pebble.rootPem();
    });
    after(async () => {
      await Promise.all(instances.map((i) => i.process.stop()));
      await pebble?.stop();
      await dns?.stop();
      await redis?.stop();
      dir.remove();
    });

    test('started together: one instance orders (Pebble issues once), the other picks the certificate up from the store', async () => {
      const log = join(dir.path, 'hook.log');
      const command = writeChalltestHook(dir.path, dns.managementUrl, log).join(', ');
      const [a, b] = await Promise.all([start('a', command), start('b', command)]);
      assert.ok(a && b);
      await Promise.all([ready(a), ready(b)]);
      const issued = pebble.issuedSerials();
      assert.equal(issued.length, 1, `Pebble issued ${issued.length} certificates`);
      assert.equal(await servedSerial(a), issued[0]);
      assert.equal(await servedSerial(b), issued[0]);
      assert.deepEqual(
        [await orders(a), await orders(b)].sort(),
        [0, 1],
        'exactly one instance placed the order',
      );
    });

    test('a renewal asked of both at once is ordered by one; both then serve the renewed certificate', async () => {
      const [a, b] = instances;
      assert.ok(a && b);
      const first = await servedSerial(a);
      const asked = await Promise.all(
        [a, b].map((i) =>
          fetch(`${i.adminUrl}/api/acme/certs/${DOMAIN}/renew?force=true`, {
            method: 'POST',
            headers: { authorization: AUTH },
          }),
        ),
      );
      assert.deepEqual(
        asked.map((r) => r.status),
        [202, 202],
      );
      await waitFor(
        async () => {
          const [sa, sb] = [await servedSerial(a), await servedSerial(b)];
          return sa !== first && sa === sb;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: 'both instances serving the renewed certificate' },
      );
      const issued = pebble.issuedSerials();
      assert.equal(issued.length, 2, `Pebble issued ${issued.length} certificates in all`);
      assert.equal(await servedSerial(a), issued[1]);
      assert.equal((await orders(a)) + (await orders(b)), 2, 'one order each time');
    });
  },
);
