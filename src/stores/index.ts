import type { StoreLookup } from '../core/store.js';

export type { Store, StoreLookup } from '../core/store.js';

export const NO_STORES: StoreLookup = { get: () => undefined };

export { StoreError, type StoreErrorCode } from './errors.js';
export { openStores, closeAllStores, openConnectionCount, type StoreSet } from './registry.js';
export { DEFAULT_KEY_PREFIX } from './resolve.js';
