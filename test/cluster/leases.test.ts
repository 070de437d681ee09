/**
 * Local fixed windows with `workers`: leases make most admissions free of IPC
 * and the limit stays exact across workers (docs/workers.md#limits-and-the-local-cache-are-per-gateway).
 * The primary's service and each worker's counter run here over an in-order
 * asynchronous channel, as node:cluster's IPC delivers messages.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PrimaryChannel } from '../../src/cluster/primary-channel.js';
import { SharedService } from '../../src/cluster/shared-service.js';
import { WindowLeases, workerSharedState } from '../../src/cluster/worker-shared.js';
import { createGatewayScope } from '../../src/observability/gateway-scope.js';
import type { WindowCounter, WindowResult } from '../../src/plugins/traffic/window-counter.js';

interface SimWorker {
  counter: WindowCounter;
  leases: WindowLeases;
  /** Messages this worker sent to the primary. */
  messages: number;
}

/** A primary and `n` workers joined by in-order asynchronous channels. */
function cluster(n: number): { workers: SimWorker[]; service: SharedService } {
  const workers: SimWorker[] = [];
  const service = new SharedService(
    createGatewayScope(),
    n,
    (id, key) =>
      new Promise((resolve) =>
        setImmediate(() => resolve((workers[id - 1] as SimWorker).leases.reclaim(key))),
      ),
  );
  for (let id = 1; id <= n; id++) {
    const leases = new WindowLeases();
    const worker: SimWorker = { counter: undefined as unknown as WindowCounter, leases, messages: 0 };
    const channel: PrimaryChannel = new PrimaryChannel((message) => {
      if (message.t !== 'calls') return;
      worker.messages++;
      setImmediate(() => {
        void Promise.resolve(service.run(id, message.c)).then((r) => setImmediate(() => channel.replies(r)));
      });
    });
    worker.counter = workerSharedState(channel, leases)('limits.fixed-window', undefined) as WindowCounter;
    workers.push(worker);
  }
  return { workers, service };
}

const take = async (w: SimWorker, limit: number): Promise<WindowResult> =>
  w.counter.take('route:all', limit, 600_000);

test('workers: a limit of 100 admits exactly 100 of 320 requests spread unevenly over 3 workers', async () => {
  const { workers } = cluster(3);
  const results: Promise<WindowResult>[] = [];
  // Bursts of varied size on varied workers, each burst in its own event-loop turn.
  for (let i = 0; i < 40; i++) {
    const w = workers[(i * 7) % 3] as SimWorker;
    for (let j = 0; j < (i % 5) * 4; j++) results.push(take(w, 100));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const answers = await Promise.all(results);
  assert.equal(answers.length, 320);
  assert.equal(answers.filter((a) => a.allowed).length, 100);
});

test('workers: admissions leased to one worker are reclaimed when another needs them, so none is lost', async () => {
  const { workers } = cluster(2);
  const [a, b] = workers as [SimWorker, SimWorker];
  // Worker A takes one admission and is leased more of the window of 40.
  assert.equal((await take(a, 40)).allowed, true);
  let admitted = 1;
  // Worker B uses up everything the primary has not leased, then needs A's leased ones.
  for (let i = 0; i < 60; i++) if ((await take(b, 40)).allowed) admitted++;
  assert.equal(admitted, 40, 'A’s unused lease went to B');
  // Nothing is left anywhere: A's lease was given back, so A is refused too.
  assert.equal((await take(a, 40)).allowed, false);
});

test('workers: with leases, most admissions of a large limit cost no message to the primary', async () => {
  const { workers } = cluster(2);
  const [a, b] = workers as [SimWorker, SimWorker];
  let admitted = 0;
  for (let i = 0; i < 500; i++) if ((await take(i % 2 === 0 ? a : b, 1_000_000)).allowed) admitted++;
  assert.equal(admitted, 500);
  assert.ok(a.messages + b.messages <= 20, `messages for 500 admissions: ${a.messages + b.messages}`);
});

test('workers: a small limit is never leased ahead, so 5 requests are answered in the order they reach the primary', async () => {
  const { workers } = cluster(2);
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => take(workers[i % 2] as SimWorker, 5)),
  );
  assert.equal(answers.filter((a) => a.allowed).length, 5);
  assert.deepEqual(
    answers.filter((a) => a.allowed).map((a) => a.remaining),
    [4, 3, 2, 1, 0],
  );
});
