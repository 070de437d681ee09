import { condition } from './condition.js';

/** Branching inside a policy. */
export const flowPlugins = [condition] as const;
