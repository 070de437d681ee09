import type { IncomingHttpHeaders } from 'node:http';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { classifyFailure } from '../../outbound/classify.js';
import { exchange, type ExchangeLimits } from '../../outbound/exchange.js';
import { acquirePool } from '../../outbound/pool-registry.js';
import { ConfigError, definePlugin, type Template } from '../../core/plugin.js';
import { headerListSchema, headerPairs } from '../shared-schemas.js';
import { AUTH_OUTPUTS } from './shared.js';
import { calloutTls, calloutTlsSchema } from '../callout-tls.js';

const headerNames = { type: 'array', items: { type: 'string', minLength: 1 }, default: [] } as const;

function lowercased(names: readonly string[]): string[] {
  return [...new Set(names.map((n) => n.toLowerCase()))];
}

/** Appends a header (or each value of a repeated one) to a flat `[name, value, …]` list. */
function push(list: string[], name: string, value: string | string[] | undefined): void {
  if (value === undefined) return;
  if (Array.isArray(value)) for (const v of value) list.push(name, v);
  else list.push(name, value);
}

/**
 * Delegates the decision to an external HTTP service. The callout carries
 * `X-Forwarded-Proto/-Method/-Host/-Uri/-For`, `extra_headers` (templated,
 * legacy `$var` too) and the listed client headers. 2xx passes with the
 * `upstream_headers` copied; any other status is mirrored on `denied`; an
 * unreachable or slow service is a provider failure on `error` (502).
 *
 * @example
 * ```yaml
 * - id: auth
 *   type: forward-auth
 *   config:
 *     uri: http://auth.internal:8080/verify
 *     request_headers: [authorization]
 *     upstream_headers: [x-user-id]
 *     client_headers: [www-authenticate]
 * ```
 */
export const forwardAuth = definePlugin({
  type: 'forward-auth',
  category: 'auth',
  description:
    'Ask an external HTTP service whether the request may pass; mirror its answer when it says no.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['uri'],
    properties: {
      uri: { type: 'string', minLength: 1 },
      request_method: { type: 'string', enum: ['GET', 'POST', 'get', 'post'], default: 'GET' },
      request_headers: headerNames,
      upstream_headers: headerNames,
      client_headers: headerNames,
      extra_headers: headerListSchema,
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000 },
      status_on_error: { type: 'integer', minimum: 400, maximum: 599 },
      allow_degradation: { type: 'boolean', default: false },
    },
  },
  outputs: AUTH_OUTPUTS,
  templated: ['extra_headers.*'],
  create(config, env) {
    let url: URL;
    try {
      url = new URL(config.uri);
    } catch {
      throw new ConfigError('uri', `'${config.uri}' is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError('uri', `must be an http:// or https:// URL (got ${url.protocol})`);
    }
    const tls = url.protocol === 'https:' ? calloutTls(config.ssl_verify, config.tls) : null;
    const post = config.request_method.toUpperCase() === 'POST';
    const method = post ? 'POST' : 'GET';
    const path = `${url.pathname}${url.search}`;
    const where = `${url.origin}${url.pathname}`;
    const extra: [string, Template][] = headerPairs(config.extra_headers).map(([name, value]) => [
      name,
      env.template(value, `extra_headers.${name}`, { legacy: true }),
    ]);
    const fixed = new Set([
      'x-forwarded-proto',
      'x-forwarded-method',
      'x-forwarded-host',
      'x-forwarded-uri',
      'x-forwarded-for',
    ]);
    for (const [name] of extra) fixed.add(name);
    if (post) fixed.add('content-encoding');
    const copied = lowercased(config.request_headers).filter((name) => !fixed.has(name));
    const upstreamHeaders = lowercased(config.upstream_headers);
    const clientHeaders = lowercased(config.client_headers);
    const limits: ExchangeLimits = { deadlineMs: config.timeout, idleMs: config.timeout, streaming: false };
    const lease = acquirePool({ origin: url.origin, tls, connectTimeoutMs: config.timeout });

    const calloutHeaders = (ctx: Context): string[] => {
      const req = ctx.request;
      const headers = [
        'x-forwarded-proto', req.scheme,
        'x-forwarded-method', req.method,
        'x-forwarded-host', req.host,
        'x-forwarded-uri', req.url,
        'x-forwarded-for', req.remoteAddress,
      ]; // prettier-ignore
      if (post) push(headers, 'content-encoding', req.headers['content-encoding']);
      for (const [name, value] of extra) headers.push(name, value.render(ctx));
      for (const name of copied) push(headers, name, req.headers[name]);
      return headers;
    };

    const allow = (ctx: Context, answer: IncomingHttpHeaders): 'success' => {
      // A listed header the service did not send is removed, so a client cannot forge it.
      for (const name of upstreamHeaders) {
        const value = answer[name];
        if (value === undefined) delete ctx.request.headers[name];
        else ctx.request.headers[name] = value;
      }
      return 'success';
    };

    const deny = (
      ctx: Context,
      status: number,
      answer: IncomingHttpHeaders,
      body: Buffer | null,
    ): 'denied' => {
      const res = ctx.response;
      res.discardStream();
      res.status = status;
      const type = answer['content-type'];
      res.setBody(body ?? Buffer.alloc(0), typeof type === 'string' ? type : undefined);
      for (const name of clientHeaders) {
        const value = answer[name];
        if (value !== undefined) res.headers[name] = value;
      }
      return 'denied';
    };

    return {
      async run(ctx) {
        const body = post ? ctx.request.body : null;
        let answer;
        try {
          answer = await exchange(
            lease.pool,
            { method, path, headers: calloutHeaders(ctx), body },
            limits,
            ctx.signal,
            null,
          );
        } catch (err) {
          const failure = classifyFailure(err);
          if (failure.code === 'UPSTREAM_CLIENT_ABORTED') throw new NodeError(failure.code, failure.reason);
          if (config.allow_degradation) {
            env.logger.warn(
              { policy: env.policy, node: env.nodeId, reason: failure.reason },
              'forward-auth failing open',
            );
            return 'success';
          }
          // docs/plugins/forward-auth.md: 502 provider_error unless status_on_error says otherwise.
          throw new NodeError('FORWARD_AUTH_ERROR', `forward-auth callout failed: ${failure.reason}`, {
            ...(config.status_on_error === undefined ? {} : { status: config.status_on_error }),
            metadata: { uri: where },
            cause: err,
          });
        }
        if (answer.status >= 200 && answer.status < 300) return allow(ctx, answer.headers);
        return deny(ctx, answer.status, answer.headers, answer.body);
      },
      close() {
        lease.release();
      },
    };
  },
});
