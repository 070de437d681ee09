/**
 * `workers: 2`: every way a configuration changes reaches every worker
 * (docs/workers.md#configuration-changes-reach-every-worker): an Admin write one
 * worker cannot apply, SIGHUP, and an etcd change.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  everyWorkerServes,
  many,
  helloGateway as gatewayYaml,
  mockPolicyJson as policy,
  converge,
  startClusterGateway,
  total,
  waitForWorkers,
  type ClusterGateway,
} from './harness.js';

describe('workers: file source', () => {
  let gw: ClusterGateway;
  before(async () => {
    gw = await startClusterGateway(gatewayYaml('v1'), {
      // The file watcher is off so only SIGHUP reloads the file.
      system: ['config: { watch: false }'],
      // Test-only hook (docs/workers.md): worker 2 refuses any change mentioning this text.
      env: { SWITCHYARD_TEST_WORKER_REJECTS: '2:refused-by-worker-2' },
    });
    await waitForWorkers(gw, 2);
  });
  after(async () => gw?.stop());

  test('workers: an Admin write one worker cannot apply returns only once a fresh worker in its place serves it', async () => {
    const before = await gw.workers();
    const put = await gw.adminCall('PUT', '/api/policies/hello', policy('refused-by-worker-2'));
    assert.equal(put.status, 200, await put.text());
    // Acknowledged: whichever worker takes a connection now answers with the new document.
    await everyWorkerServes(gw, '/hello', 'refused-by-worker-2');
    const now = await gw.workers();
    assert.equal(now.get(1)?.pid, before.get(1)?.pid, 'worker 1 applied it in place');
    assert.notEqual(now.get(2)?.pid, before.get(2)?.pid, 'worker 2 was replaced');
    assert.equal(total(await gw.metrics(), 'gateway_cluster_worker_restarts_total'), 1);
    assert.match(gw.process.output(), /worker cannot apply the configuration; replacing it/);
    assert.match(gw.process.output(), /SWITCHYARD_TEST_WORKER_REJECTS: worker 2 refuses/);
  });

  test('workers: a later write reaches the replacement and its sibling without another restart', async () => {
    const put = await gw.adminCall('PUT', '/api/policies/hello', policy('v2'));
    assert.equal(put.status, 200, await put.text());
    await everyWorkerServes(gw, '/hello', 'v2');
    assert.equal(total(await gw.metrics(), 'gateway_cluster_worker_restarts_total'), 1);
  });

  test('workers: SIGHUP reloads gateway.yaml in every worker', async () => {
    writeFileSync(gw.gatewayPath, gatewayYaml('after-sighup'));
    // The watcher is off: nothing changes until the signal.
    assert.ok((await many(gw, 6, '/hello')).every((a) => a.body === 'v2'));
    gw.process.child.kill('SIGHUP');
    await converge(gw, 'after-sighup', 'every worker to serve the reloaded file');
    await everyWorkerServes(gw, '/hello', 'after-sighup');
    assert.equal(
      total(await gw.metrics(), 'gateway_cluster_worker_restarts_total'),
      1,
      'no worker restarted',
    );
  });
});
