import { storeDelete } from './store-delete.js';
import { storeGet } from './store-get.js';
import { storeIncr } from './store-incr.js';
import { storeSet } from './store-set.js';

/** Nodes that read and write policy keys (`<key_prefix>:kv:<key>`) of a named store. */
export const storePlugins = [storeGet, storeSet, storeIncr, storeDelete] as const;
