import { serverlessPostFunction } from './serverless-post-function.js';
import { serverlessPreFunction } from './serverless-pre-function.js';

/** Lua function lists run before or after the rest of the policy. */
export const serverlessPlugins = [serverlessPreFunction, serverlessPostFunction] as const;
