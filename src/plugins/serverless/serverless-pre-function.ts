import { serverlessFunction } from './serverless.js';

/** Lua functions run before the upstream (by where the node is wired). */
export const serverlessPreFunction = serverlessFunction(
  'serverless-pre-function',
  'Run a list of Lua execute(ctx) functions in order, before the upstream.',
);
