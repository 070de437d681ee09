import { limitConn } from './limit-conn.js';
import { limitCount } from './limit-count.js';
import { rateLimit } from './rate-limit.js';
import { workflow } from './workflow.js';

/** Rate and concurrency limits, and the workflow rules that apply them conditionally. */
export const limitPlugins = [rateLimit, limitCount, limitConn, workflow] as const;
