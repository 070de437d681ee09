/**
 * `workers: 2` with ACME against Pebble: the primary orders, whichever worker
 * the validator reaches answers the TLS-ALPN-01 challenge, and an issued or
 * renewed certificate reaches every worker (docs/workers.md).
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { startPebble, skipWithoutPebble, type PebbleServer } from '../support/pebble.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { mockPolicy, startClusterGateway, total, waitForWorkers, type ClusterGateway } from './harness.js';

const DOMAIN = 'gw.test';

interface Answer {
  status: number;
  body: string;
  serial: string;
  authorized: boolean;
}

/** One HTTPS request on a fresh connection (so node:cluster spreads them over the workers). */
function get(port: number, ca: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/hello',
        servername: DOMAIN,
        headers: { host: DOMAIN },
        ca,
        agent: false,
        rejectUnauthorized: false,
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const serial = socket.getPeerCertificate().serialNumber.toLowerCase();
        const authorized = socket.authorized;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial, authorized }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end();
  });
}

describe('workers: ACME certificates reach every worker', { skip: skipWithoutPebble() }, () => {
  let pebble: PebbleServer;
  let gw: ClusterGateway;
  let root = '';
  const state = tempDir('switchyard-cluster-acme-');
  const port = () => Number(new URL(gw.data).port);

  const serialListed = async (): Promise<string | null> => {
    const list = (await (await gw.adminCall('GET', '/api/acme/certs')).json()) as {
      certs: { state: string; serial: string | null }[];
    };
    return list.certs[0]?.state === 'issued' ? (list.certs[0].serial ?? null) : null;
  };

  /** Every one of 12 fresh connections presents `serial`, trusted, and both workers answered some. */
  const everyWorkerPresents = async (serial: string, restarts: number): Promise<void> => {
    // The rolling restart has replaced both workers and both serve again.
    await waitFor(
      async () =>
        total(await gw.metrics(), 'gateway_cluster_worker_restarts_total') >= restarts &&
        (await gw.workers()).size === 2,
      { timeoutMs: 90_000, intervalMs: 300, what: 'both workers replaced and serving' },
    );
    await waitFor(
      async () =>
        (await Promise.all(Array.from({ length: 12 }, () => get(port(), root).catch(() => undefined)))).every(
          (a) => a?.serial === serial,
        ),
      { timeoutMs: 90_000, intervalMs: 300, what: `every worker to present serial ${serial}` },
    );
    const before = await gw.workers();
    const answers = await Promise.all(Array.from({ length: 16 }, () => get(port(), root)));
    const afterwards = await gw.workers();
    assert.deepEqual(
      new Set(answers.map((a) => `${a.status} ${a.body} ${a.serial} ${a.authorized}`)),
      new Set([`200 hello ${serial} true`]),
    );
    const served = [...afterwards].map(([slot, w]) => w.requests - (before.get(slot)?.requests ?? 0));
    assert.equal(served.length, 2);
    assert.ok(
      served.every((n) => n > 0),
      `both workers answered: ${served.join(', ')}`,
    );
  };

  before(async () => {
    pebble = await startPebble();
    root = await pebble.rootPem();
    gw = await startClusterGateway(
      `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:${mockPolicy('hello', 'hello')}
`,
      {
        port: pebble.tlsPort,
        system: [
          'tls:',
          `  acme: { domains: [${DOMAIN}] }`,
          'acme:',
          `  directory_url: ${pebble.directoryUrl}`,
          `  directory_ca_path: ${pebble.directoryCaPath}`,
          '  terms_of_service_agreed: true',
          `  storage: { type: filesystem, dir: ${state.path} }`,
        ],
      },
    );
    await waitForWorkers(gw, 2);
  });
  after(async () => {
    await gw?.stop();
    await pebble?.stop();
    state.remove();
  });

  test('workers: the first certificate is issued through a worker answering the challenge and served by both workers', async () => {
    let serial: string | null = null;
    await waitFor(async () => (serial = await serialListed()) !== null, {
      timeoutMs: 90_000,
      intervalMs: 300,
      what: 'the certificate to be issued',
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${gw.process.output().slice(-4000)}`);
    });
    await everyWorkerPresents(serial as unknown as string, 2);
  });

  test('workers: a forced renewal replaces the certificate in every worker', async () => {
    const first = await serialListed();
    assert.ok(first !== null);
    const restarts = total(await gw.metrics(), 'gateway_cluster_worker_restarts_total');
    const renew = await gw.adminCall('POST', `/api/acme/certs/${DOMAIN}/renew?force=true`);
    assert.equal(renew.status, 202, await renew.text());
    let renewed: string | null = null;
    await waitFor(
      async () => {
        renewed = await serialListed();
        return renewed !== null && renewed !== first;
      },
      { timeoutMs: 90_000, intervalMs: 300, what: 'the renewed certificate' },
    );
    await everyWorkerPresents(renewed as unknown as string, restarts + 2);
    assert.ok(
      total(await gw.metrics(), 'gateway_cluster_worker_restarts_total') >= restarts + 2,
      'each worker was replaced by one that loaded the renewed certificate',
    );
  });
});
