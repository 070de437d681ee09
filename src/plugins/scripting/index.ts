import { script } from './script.js';

/** The Lua node type `script`. */
export const scriptingPlugins = [script] as const;
