import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ActivePolicy, CheckSubscriber } from '../../../src/outbound/health/active.js';
import type { ProbeVerdict } from '../../../src/outbound/health/grpc-check.js';
import { HealthRegistry } from '../../../src/outbound/health/registry.js';
import { waitFor } from '../../support/wait.js';

/**
 * The registry behind "state survives a reload" (src/outbound/health/registry.ts): one check per
 * key whatever the number of subscribers, kept while any subscriber holds it, stopped after the
 * last one leaves; probes go through the newest subscriber.
 */
const policy: ActivePolicy = {
  type: 'http',
  grpcService: '',
  path: '/healthz',
  intervalMs: 10,
  timeoutMs: 100,
  healthyStatuses: new Set([200]),
  unhealthyThreshold: 2,
  healthyThreshold: 1,
};

/** A subscriber whose probes answer `verdict()`, counting its probes and the flips it heard. */
function subscriber(verdict: () => ProbeVerdict | Promise<ProbeVerdict>) {
  const seen = { probes: 0, flips: [] as boolean[] };
  const sub: CheckSubscriber = {
    probe: () => {
      seen.probes++;
      return Promise.resolve(verdict());
    },
    changed: (up) => seen.flips.push(up),
  };
  return { sub, seen };
}

test('health registry: subscribers of one key share one check and its state; the last release stops it', async () => {
  const registry = new HealthRegistry();
  let healthy = false;
  const verdict = () => ({ healthy, reason: healthy ? 'ok' : 'down' });
  const first = subscriber(verdict);
  const lease1 = registry.check('k', policy, first.sub);
  await waitFor(() => !lease1.state.up, { what: 'the target marked down' });
  assert.deepEqual(first.seen.flips, [false]);

  // A successor (a reload) subscribes before the first one is released: it finds the target down.
  const second = subscriber(verdict);
  const lease2 = registry.check('k', policy, second.sub);
  assert.equal(lease2.state, lease1.state);
  assert.equal(lease2.state.up, false);
  assert.equal(registry.checks, 1);
  lease1.release();
  lease1.release(); // idempotent
  assert.equal(lease2.state.stopped, false);
  const before = second.seen.probes;
  await waitFor(() => second.seen.probes >= before + 2, { what: 'probes through the successor' });

  healthy = true;
  await waitFor(() => lease2.state.up, { what: 'the target back up' });
  assert.deepEqual(second.seen.flips, [true], 'only subscribers still there hear the flip');
  assert.deepEqual(first.seen.flips, [false]);

  lease2.release();
  assert.equal(lease2.state.stopped, true);
  assert.equal(registry.checks, 0);
  // Another key is another check.
  const other = registry.check('k2', policy, subscriber(verdict).sub);
  assert.notEqual(other.state, lease2.state);
  other.release();
});

test('health registry: a probe whose subscriber left is not counted and goes again through another', async () => {
  const registry = new HealthRegistry();
  const once = { ...policy, unhealthyThreshold: 1 };
  let release!: (v: ProbeVerdict) => void;
  const leaving = subscriber(() => new Promise<ProbeVerdict>((resolve) => (release = resolve)));
  const leaseA = registry.check('k', once, leaving.sub);
  await waitFor(() => leaving.seen.probes === 1, { what: 'the first probe' });
  const staying = subscriber(() => ({ healthy: true, reason: 'ok' }));
  const leaseB = registry.check('k', once, staying.sub);
  leaseA.release();
  // The leaving subscriber's connections were closed under its probe: a failure, not counted.
  release({ healthy: false, reason: 'socket closed' });
  await waitFor(() => staying.seen.probes >= 3, { what: 'probes through the staying subscriber' });
  assert.equal(leaseB.state.up, true);
  assert.deepEqual(staying.seen.flips, [], 'the target was never marked down');
  assert.equal(leaving.seen.probes, 1);
  leaseB.release();
});

test('health registry: passive state is kept while a lease holds it', () => {
  const registry = new HealthRegistry();
  const passive = { maxFails: 1, failTimeoutMs: 60_000 };
  const a = registry.passive('node|target', passive);
  a.state.failed(Date.now());
  const b = registry.passive('node|target', passive);
  assert.equal(b.state, a.state);
  assert.equal(b.state.isEjected(Date.now()), true);
  a.release();
  b.release();
  const fresh = registry.passive('node|target', passive);
  assert.equal(fresh.state.isEjected(Date.now()), false, 'released by all: a later node starts fresh');
  fresh.release();
});
