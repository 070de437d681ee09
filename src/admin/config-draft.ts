import type { GatewayConfig } from '../config/gateway.js';
import { nextTurn } from '../runtime/young-collection.js';

/**
 * A copy of `config` an Admin edit may change: every top-level list is a new array, the items in
 * it are the running configuration's own. Edits add, remove, replace and reorder items
 * (resources.ts putItem/removeItem, route-order.ts) and never change one in place, so the running
 * configuration is untouched. A deep copy of 10,000 routes and policies took ~250 ms of the main
 * thread on every write (docs/admin-api.md#writes-at-scale).
 */
export function draftOf(config: GatewayConfig): GatewayConfig {
  const draft: Record<string, unknown> = {};
  for (const key of Object.keys(config)) {
    const value = (config as unknown as Record<string, unknown>)[key];
    draft[key] = Array.isArray(value) ? [...(value as unknown[])] : structuredClone(value);
  }
  return draft as unknown as GatewayConfig;
}

/** Bytes of each item's JSON, kept while the item lives: items are never changed in place. */
const itemBytes = new WeakMap<object, number>();

const bytesOfJson = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? 'null');

function itemSize(item: unknown): number {
  if (typeof item !== 'object' || item === null) return bytesOfJson(item);
  let size = itemBytes.get(item);
  if (size === undefined) {
    size = bytesOfJson(item);
    itemBytes.set(item, size);
  }
  return size;
}

/**
 * `Buffer.byteLength(JSON.stringify(config))`, with each list item's JSON measured once: a write
 * re-measures only the items it brings. The first measure of a large configuration pauses every
 * few milliseconds so requests keep being served.
 */
export async function configJsonBytes(config: GatewayConfig): Promise<number> {
  let size = 2;
  let first = true;
  let sliceStart = performance.now();
  for (const key of Object.keys(config)) {
    const value = (config as unknown as Record<string, unknown>)[key];
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    size += (first ? 0 : 1) + bytesOfJson(key) + 1;
    first = false;
    if (!Array.isArray(value)) size += bytesOfJson(value);
    else {
      size += 2 + Math.max(0, value.length - 1);
      for (let i = 0; i < value.length; i++) {
        size += itemSize(value[i]);
        if (i % 64 === 63 && performance.now() - sliceStart >= MEASURE_SLICE_MS) {
          await nextTurn();
          sliceStart = performance.now();
        }
      }
    }
  }
  return size;
}

/** Main-thread time one slice of a first measure may take. */
const MEASURE_SLICE_MS = 5;
