import { bodyTransformer } from './body-transformer/index.js';
import { brotli } from './brotli.js';
import { degraphql } from './degraphql.js';
import { echo } from './echo.js';
import { gzip } from './gzip.js';
import { proxyRewrite } from './proxy-rewrite.js';
import { realIp } from './real-ip.js';
import { redirect } from './redirect.js';
import { requestId } from './request-id.js';
import { responseRewrite } from './response-rewrite.js';
import { setVars } from './set-vars.js';
import { upstream } from './upstream.js';

/** Proxying and rewriting: the upstream call, request and response rewrites, compression. */
export const corePlugins = [
  upstream,
  echo,
  proxyRewrite,
  realIp,
  requestId,
  responseRewrite,
  redirect,
  setVars,
  bodyTransformer,
  degraphql,
  gzip,
  brotli,
] as const;
