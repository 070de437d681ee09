/** The shared batching sender: when batches leave, what is dropped, and that a push never waits. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BatchSender,
  Undeliverable,
  type BatchSettings,
} from '../../../src/plugins/observability/shared/batch.js';
import { waitFor } from '../../support/wait.js';

const settings = (overrides: Partial<BatchSettings>): BatchSettings => ({
  maxSize: 1000,
  inactiveMs: 60_000,
  bufferDurationMs: 60_000,
  maxRetries: 0,
  retryDelayMs: 0,
  maxPending: 10_000,
  ...overrides,
});

/** A ship function that records batches; `hold` keeps shipments pending until released. */
function recorder(options: { hold?: boolean; failures?: number; error?: () => Error } = {}) {
  const batches: number[][] = [];
  const attempts: number[][] = [];
  let release: () => void = () => {};
  let gate = options.hold === true ? new Promise<void>((r) => (release = r)) : Promise.resolve();
  let failures = options.failures ?? 0;
  return {
    batches,
    attempts,
    release: () => {
      release();
      gate = Promise.resolve();
    },
    ship: async (batch: number[]) => {
      attempts.push(batch);
      await gate;
      if (failures > 0) {
        failures--;
        throw options.error?.() ?? new Error('collector down');
      }
      batches.push(batch);
    },
  };
}

function reports() {
  const seen: { kind: string; count: number }[] = [];
  return { seen, report: (kind: string, count: number) => seen.push({ kind, count }) };
}

test('batching: a full batch leaves at once; the rest waits for quiet', async () => {
  const r = recorder();
  const sender = new BatchSender(settings({ maxSize: 3, inactiveMs: 60_000 }), r.ship, () => {});
  for (const n of [1, 2, 3, 4]) sender.push(n);
  await waitFor(() => r.batches.length === 1, { what: 'the full batch' });
  assert.deepEqual(r.batches, [[1, 2, 3]]);
  assert.equal(sender.stats.pending, 1);
  await sender.close();
  assert.deepEqual(r.batches, [[1, 2, 3], [4]], 'close ships what waits');
});

test('batching: inactive_timeout ships a partial batch after a quiet period', async () => {
  const r = recorder();
  const sender = new BatchSender(settings({ inactiveMs: 30 }), r.ship, () => {});
  sender.push(1);
  sender.push(2);
  assert.deepEqual(r.batches, [], 'nothing leaves on the request path');
  await waitFor(() => r.batches.length === 1, { what: 'the inactive flush' });
  assert.deepEqual(r.batches, [[1, 2]]);
  await sender.close();
});

test('batching: buffer_duration ships even while entries keep arriving', async () => {
  const r = recorder();
  const sender = new BatchSender(settings({ inactiveMs: 60_000, bufferDurationMs: 60 }), r.ship, () => {});
  const started = performance.now();
  const feeder = setInterval(() => sender.push(1), 5);
  try {
    await waitFor(() => r.batches.length >= 1, { what: 'the age flush' });
  } finally {
    clearInterval(feeder);
  }
  assert.ok(performance.now() - started < 2000);
  await sender.close();
});

test('batching: a full buffer drops the oldest entries, and push never waits for a stuck collector', async () => {
  const r = recorder({ hold: true });
  const { seen, report } = reports();
  const sender = new BatchSender(settings({ maxSize: 1, maxPending: 3 }), r.ship, report);
  sender.push(0);
  await waitFor(() => r.attempts.length === 1, { what: 'the first shipment to start' });
  const started = performance.now();
  for (let i = 1; i <= 10_000; i++) sender.push(i);
  assert.ok(performance.now() - started < 500, 'ten thousand pushes against a stuck collector stay cheap');
  assert.equal(sender.stats.pending, 3);
  assert.equal(sender.stats.dropped, 9997);
  assert.deepEqual(seen, [{ kind: 'dropped', count: 1 }], 'losses are reported, rate-limited');
  r.release();
  await sender.close();
  assert.deepEqual(r.batches, [[0], [9998], [9999], [10000]], 'the newest entries survive');
});

test('batching: a failed shipment is retried max_retry_count times, then dropped and reported', async () => {
  const r = recorder({ failures: 2 });
  const sender = new BatchSender(settings({ maxSize: 2, maxRetries: 2, retryDelayMs: 5 }), r.ship, () => {});
  sender.push(1);
  sender.push(2);
  await waitFor(() => r.batches.length === 1, { what: 'the third attempt' });
  assert.equal(r.attempts.length, 3);
  assert.equal(sender.stats.sent, 2);
  await sender.close();

  const failing = recorder({ failures: 5 });
  const { seen, report } = reports();
  const giveUp = new BatchSender(
    settings({ maxSize: 1, maxRetries: 1, retryDelayMs: 5 }),
    failing.ship,
    report,
  );
  giveUp.push(1);
  await waitFor(() => giveUp.stats.failed === 1, { what: 'the batch to be dropped' });
  assert.equal(failing.attempts.length, 2);
  assert.deepEqual(seen, [{ kind: 'failed', count: 1 }]);
  await giveUp.close();
});

test('batching: an Undeliverable answer (a 4xx) is never retried', async () => {
  const r = recorder({ failures: 1, error: () => new Undeliverable('400 bad payload') });
  const sender = new BatchSender(settings({ maxSize: 1, maxRetries: 5, retryDelayMs: 5 }), r.ship, () => {});
  sender.push(1);
  await waitFor(() => sender.stats.failed === 1, { what: 'the drop' });
  assert.equal(r.attempts.length, 1);
  await sender.close();
});

test('batching: after close, pushes are ignored and no timer keeps running', async () => {
  const r = recorder();
  const sender = new BatchSender(settings({ inactiveMs: 10 }), r.ship, () => {});
  await sender.close();
  sender.push(1);
  assert.equal(sender.stats.pending, 0);
  assert.deepEqual(r.attempts, []);
});
