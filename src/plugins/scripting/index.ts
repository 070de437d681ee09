import { script } from './script.js';
import { serverlessPostFunction } from '../serverless/serverless-post-function.js';
import { serverlessPreFunction } from '../serverless/serverless-pre-function.js';

/** The Lua node types: `script` and the two serverless function lists. */
export const scriptingPlugins = [script, serverlessPreFunction, serverlessPostFunction] as const;
