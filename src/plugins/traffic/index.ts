import { apiBreaker } from './api-breaker.js';
import { faultInjection } from './fault-injection.js';
import { limitConn } from './limit-conn.js';
import { limitCount } from './limit-count.js';
import { proxyCache } from './proxy-cache.js';
import { proxyMirror } from './proxy-mirror.js';
import { rateLimit } from './rate-limit.js';
import { trafficLabel } from './traffic-label.js';
import { trafficSplit } from './traffic-split.js';
import { workflow } from './workflow.js';

/** Shaping traffic: faults, labels and splits, breakers, mirrors, rate and concurrency limits, the response cache. */
export const trafficPlugins = [
  faultInjection,
  trafficLabel,
  trafficSplit,
  apiBreaker,
  proxyMirror,
  rateLimit,
  limitCount,
  limitConn,
  workflow,
  proxyCache,
] as const;
