import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../support/free-port.js';
import { spawnGateway, type GatewayProcess } from '../support/gateway-process.js';
import { skipWithoutPebble, startPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { handshake, HELLO_YAML, PASSWORD, USER } from './harness.js';

const ADMIN_DOMAIN = 'admin.gw.test';

describe(
  'acme: HTTP-01 with workers (the primary orders, a worker answers)',
  { skip: skipWithoutPebble() },
  () => {
    let pebble: PebbleServer;
    let gw: GatewayProcess | undefined;
    let root = '';
    const dir = tempDir('switchyard-acme-workers-http01-');

    before(async () => {
      pebble = await startPebble({ httpPort: await freePort() });
      root = await pebble.rootPem();
    });
    after(async () => {
      await gw?.stop();
      await pebble.stop();
      dir.remove();
    });

    test('the token reaches the workers serving the data plane and the admin certificate is issued', async () => {
      const adminPort = await freePort();
      const system = join(dir.path, 'system.yaml');
      const gateway = join(dir.path, 'gateway.yaml');
      writeFileSync(
        system,
        `
listener: { bind: 127.0.0.1, port: ${pebble.httpPort} }
timeouts: { shutdown_timeout_seconds: 5 }
workers: 2
admin:
  bind: 127.0.0.1
  port: ${adminPort}
  username: ${USER}
  password: "${PASSWORD}"
  tls: { acme: { domains: [${ADMIN_DOMAIN}] } }
acme:
  directory_url: ${pebble.directoryUrl}
  directory_ca_path: ${pebble.directoryCaPath}
  terms_of_service_agreed: true
  challenge: http-01
  storage: { type: filesystem, dir: ${join(dir.path, 'state')} }
`,
      );
      writeFileSync(gateway, HELLO_YAML);
      const proc = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
      gw = proc;
      // In workers mode only the workers listen on the data plane: without the relay nobody could answer.
      await waitFor(
        async () => {
          if (proc.child.exitCode !== null) throw new Error(`the gateway exited: ${proc.output()}`);
          try {
            return (await handshake(adminPort, { servername: ADMIN_DOMAIN, ca: root })).authorized;
          } catch {
            return false;
          }
        },
        { timeoutMs: 90_000, intervalMs: 300, what: 'the admin certificate issued through a worker' },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${proc.output().slice(-3000)}`, { cause: err });
      });
      const served = await handshake(adminPort, { servername: ADMIN_DOMAIN, ca: root });
      assert.equal(served.cert.subjectaltname, `DNS:${ADMIN_DOMAIN}`);
      assert.deepEqual(pebble.issuedSerials(), [served.cert.serialNumber.toLowerCase()]);
      const hello = await fetch(`http://127.0.0.1:${pebble.httpPort}/hello`);
      assert.deepEqual([hello.status, await hello.text()], [200, 'hello']);
    });
  },
);
