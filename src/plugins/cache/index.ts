import { proxyCache } from '../traffic/proxy-cache.js';

/** The response cache (lookup, store and purge halves of one node type). */
export const cachePlugins = [proxyCache] as const;
