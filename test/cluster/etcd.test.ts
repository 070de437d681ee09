/**
 * `workers: 2`: every way a configuration changes reaches every worker
 * (docs/workers.md#configuration-changes-reach-every-worker): an Admin write one
 * worker cannot apply, SIGHUP, and an etcd change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { skipWithoutEtcd, startEtcd, type EtcdServer } from '../support/etcd.js';
import {
  everyWorkerServes,
  helloGateway as gatewayYaml,
  mockPolicyJson as policy,
  converge,
  startClusterGateway,
  waitForWorkers,
  type ClusterGateway,
} from './harness.js';

describe('workers: etcd source', { skip: skipWithoutEtcd() }, () => {
  let etcd: EtcdServer;
  let gw: ClusterGateway;
  before(async () => {
    etcd = await startEtcd();
    gw = await startClusterGateway(gatewayYaml('seeded'), {
      system: [
        `config: { source: etcd, etcd: { endpoints: ["${etcd.url}"], prefix: /workers, timeout_ms: 2000 } }`,
      ],
    });
    await waitForWorkers(gw, 2);
  });
  after(async () => {
    await gw?.stop();
    await etcd?.stop();
  });

  test('workers: a change written to etcd by someone else reaches every worker', async () => {
    await everyWorkerServes(gw, '/hello', 'seeded');
    await etcd.put('/workers/policies/hello', JSON.stringify({ name: 'hello', ...policy('from-etcd') }));
    await converge(gw, 'from-etcd', 'every worker to serve the etcd change');
    await everyWorkerServes(gw, '/hello', 'from-etcd');
  });

  test('workers: an Admin write with the etcd source is served by every worker once acknowledged', async () => {
    const put = await gw.adminCall('PUT', '/api/policies/hello', policy('admin-via-etcd'));
    assert.equal(put.status, 200, await put.text());
    await everyWorkerServes(gw, '/hello', 'admin-via-etcd');
    assert.deepEqual(await etcd.keys('/workers/policies/'), ['/workers/policies/hello']);
  });
});
