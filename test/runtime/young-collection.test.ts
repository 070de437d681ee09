import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { collectYoungGeneration } from '../../src/runtime/young-collection.js';
import { forcedMinorCollections } from '../support/forced-collections.js';

test('collectYoungGeneration runs one forced young-generation collection per call', async () => {
  const count = await forcedMinorCollections(() => {
    collectYoungGeneration();
    collectYoungGeneration();
    collectYoungGeneration();
  });
  assert.equal(count, 3);
});

test('the gc function stays out of reach: not on the global, not in contexts made afterwards', () => {
  collectYoungGeneration();
  const exposedAtStart = process.execArgv.some((flag) => flag === '--expose-gc' || flag === '--expose_gc');
  if (!exposedAtStart) assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
  // A script sandbox made after the first collection has no way to force collections.
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});
