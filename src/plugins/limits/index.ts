import { limitConn } from '../traffic/limit-conn.js';
import { limitCount } from '../traffic/limit-count.js';
import { rateLimit } from '../traffic/rate-limit.js';
import { workflow } from '../traffic/workflow.js';

/** Rate and concurrency limits, and the workflow rules that apply them conditionally. */
export const limitPlugins = [rateLimit, limitCount, limitConn, workflow] as const;
