import { serverlessFunction } from './serverless.js';

/** Lua functions run after the upstream (by where the node is wired). */
export const serverlessPostFunction = serverlessFunction(
  'serverless-post-function',
  'Run a list of Lua execute(ctx) functions in order, after the upstream.',
);
