import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { asObject, parseJson, ProviderClient } from './provider-client.js';
import { AUTH_OUTPUTS } from './shared.js';
import { calloutTlsSchema } from '../callout-tls.js';

/** What OPA decided: `result` as a boolean, or an object with `allow` and the denial's details. */
interface Decision {
  allow: boolean;
  status: number;
  /** Lowercased names. */
  headers: Map<string, string | string[]>;
  reason: unknown;
}

/**
 * Asks Open Policy Agent for a decision: `POST <host>/v1/data/<policy>` with
 * the request described as `{input}` (APISIX's input document), and reads
 * `result`. Allowed requests continue with `send_headers_upstream` copied
 * from `result.headers`; a denial answers with `result.status_code` (403 by
 * default), `result.headers` and `result.reason` as the body. OPA being
 * unreachable or answering without a decision is a provider failure (502).
 *
 * @example
 * ```yaml
 * - id: authz
 *   type: opa
 *   config:
 *     host: http://opa.internal:8181
 *     policy: httpapi/authz
 *     with_consumer: true
 *     send_headers_upstream: [x-user-role]
 * ```
 */
export const opa = definePlugin({
  type: 'opa',
  category: 'auth',
  description: 'Ask Open Policy Agent whether the request may pass; answer with its denial otherwise.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['host', 'policy'],
    properties: {
      host: { type: 'string', minLength: 1, description: 'OPA base URL, e.g. http://opa:8181.' },
      policy: { type: 'string', minLength: 1, description: 'Decision path: POST <host>/v1/data/<policy>.' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Whole-call deadline (ms).' },
      with_consumer: { type: 'boolean', default: false, description: 'Add the attached consumer to input.' },
      with_route: {
        type: 'boolean',
        default: false,
        description: 'Add the route and policy names to input.',
      },
      with_service: {
        type: 'boolean',
        default: false,
        description: 'Accepted for APISIX configs; no effect.',
      },
      send_headers_upstream: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: [],
        description: 'result.headers copied onto the request on allow; absent ones are removed.',
      },
    },
  },
  outputs: AUTH_OUTPUTS,
  templated: [],
  create(config) {
    const policy = config.policy.trim().replace(/^\/+/, '');
    if (policy === '') throw new ConfigError('policy', 'must name a decision path');
    const client = new ProviderClient({
      code: 'OPA_ERROR',
      name: 'OPA',
      timeoutMs: config.timeout,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const base = config.host.trim().replace(/\/+$/, '');
    const endpoint = client.endpoint(`${base}/v1/data/${policy}`, 'host');
    const upstreamHeaders = [...new Set(config.send_headers_upstream.map((n) => n.toLowerCase()))];
    const headers = ['content-type', 'application/json', 'accept', 'application/json'];
    const options = { withConsumer: config.with_consumer, withRoute: config.with_route };

    const decide = (body: Buffer): Decision | string => {
      const doc = asObject(parseJson(body));
      if (doc === undefined) return 'OPA answer is not a JSON object';
      if (!('result' in doc)) return `OPA has no decision at '${policy}' (the document is undefined)`;
      const result = doc['result'];
      if (typeof result === 'boolean')
        return { allow: result, status: 403, headers: new Map(), reason: null };
      const object = asObject(result);
      if (object === undefined) return `OPA result at '${policy}' is neither a boolean nor an object`;
      return {
        allow: object['allow'] === true,
        status: denialStatus(object['status_code'] ?? object['status']),
        headers: headerMap(object['headers']),
        reason: object['reason'],
      };
    };

    return {
      async run(ctx) {
        const input = JSON.stringify({ input: opaInput(ctx, options) });
        const answer = await client.call(ctx.signal, endpoint, { method: 'POST', headers, body: input });
        if (answer.status !== 200) throw client.failure(`OPA answered ${answer.status}`, endpoint);
        const decision = decide(answer.body);
        if (typeof decision === 'string') throw client.failure(decision, endpoint);
        if (decision.allow) {
          // A listed header OPA did not send is removed, so a client cannot forge it.
          for (const name of upstreamHeaders) {
            const value = decision.headers.get(name);
            if (value === undefined) delete ctx.request.headers[name];
            else ctx.request.headers[name] = value;
          }
          return 'success';
        }
        const res = ctx.response;
        res.discardStream();
        res.status = decision.status;
        const reason = decision.reason;
        if (reason === undefined || reason === null) res.setBody('');
        else if (typeof reason === 'string') res.setBody(reason, 'text/plain; charset=utf-8');
        else res.setBody(JSON.stringify(reason), 'application/json');
        for (const [name, value] of decision.headers) res.headers[name] = value;
        return 'denied';
      },
      close() {
        client.close();
      },
    };
  },
});

/** `result.status_code` when it is a usable HTTP status, else 403. */
function denialStatus(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 200 && value <= 599 ? value : 403;
}

function headerMap(value: unknown): Map<string, string | string[]> {
  const out = new Map<string, string | string[]>();
  for (const [name, v] of Object.entries(asObject(value) ?? {})) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out.set(name.toLowerCase(), String(v));
    } else if (Array.isArray(v) && v.every((item) => typeof item === 'string')) {
      out.set(name.toLowerCase(), v);
    }
  }
  return out;
}

/**
 * The `input` document of APISIX's OPA helper: `type`, `request` (one value per
 * header or query key unless repeated), `var`, and optionally `consumer` and
 * `route`.
 */
export function opaInput(
  ctx: Context,
  options: { withConsumer: boolean; withRoute: boolean },
  now = Math.floor(Date.now() / 1000),
): Record<string, unknown> {
  const req = ctx.request;
  const [host, port] = splitHost(req.host, req.scheme);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = value;
  }
  const query: Record<string, string | string[]> = {};
  for (const [name, values] of req.query) query[name] = values.length === 1 ? values[0]! : values;
  const input: Record<string, unknown> = {
    type: 'http',
    request: { scheme: req.scheme, method: req.method, host, port, path: req.path, headers, query },
    var: { remote_addr: req.remoteAddress, remote_port: req.remotePort, timestamp: now },
  };
  if (options.withRoute) input['route'] = { name: ctx.route, policy: ctx.policy };
  if (options.withConsumer && ctx.consumer !== undefined) {
    const consumer: Record<string, unknown> = { username: ctx.consumer.name };
    for (const [key, value] of Object.entries(ctx.message)) {
      if (key.startsWith('consumer.')) consumer[key.slice('consumer.'.length)] = value;
    }
    input['consumer'] = consumer;
  }
  return input;
}

/** Host name and port of a Host header; the port defaults from the scheme. */
function splitHost(hostHeader: string, scheme: 'http' | 'https'): [string, number] {
  const fallback = scheme === 'https' ? 443 : 80;
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(hostHeader);
  if (match === null) return [hostHeader, fallback];
  const name = match[1]!.replace(/^\[|\]$/g, '');
  return [name, match[2] === undefined ? fallback : Number(match[2])];
}
