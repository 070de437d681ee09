import type { Context, RequestPart } from '../../core/context.js';
import { buildRequestHeaders } from '../../outbound/proxy-headers.js';
import type { NodeInstance } from '../../core/plugin.js';
import { applyReply, callOut, type CalloutErrors } from './callout.js';
import type { Endpoint, FunctionUri } from './endpoint.js';

/** How a node authenticates a forwarded callout. */
export interface CalloutAuth {
  /** Client headers this scheme sets itself, so they are not forwarded. */
  readonly omit: ReadonlySet<string>;
  /** Appends the scheme's headers to `headers` (flat list) and returns the path plus query to send. */
  prepare(headers: string[], req: RequestPart, endpoint: Endpoint): string;
}

const NOTHING: ReadonlySet<string> = new Set();

/** No credentials: the client's request goes as it is. */
export const noAuth: CalloutAuth = {
  omit: NOTHING,
  prepare: (_headers, req, endpoint) => endpointPath(endpoint, req),
};

/**
 * Adds fixed headers unless the client already sent one of `unlessSent`: APISIX
 * and the reference both leave a key the client brought alone.
 */
export function headerAuth(pairs: readonly string[], unlessSent: readonly string[]): CalloutAuth {
  if (pairs.length === 0) return noAuth;
  return {
    omit: NOTHING,
    prepare(headers, req, endpoint) {
      if (!unlessSent.some((name) => req.headers[name] !== undefined))
        for (const item of pairs) headers.push(item);
      return endpointPath(endpoint, req);
    },
  };
}

/** Replaces whatever the client sent in `name` with `value`. */
export function replaceHeaderAuth(name: string, value: string): CalloutAuth {
  return {
    omit: new Set([name]),
    prepare(headers, req, endpoint) {
      headers.push(name, value);
      return endpointPath(endpoint, req);
    },
  };
}

/**
 * A function node that forwards the client's method, headers, query and body
 * to its endpoint and relays the reply, status unchanged.
 */
export class ForwardingNode implements NodeInstance<'success'> {
  readonly #uri: FunctionUri;
  readonly #errors: CalloutErrors;
  readonly #timeoutMs: number;
  readonly #auth: CalloutAuth;

  constructor(uri: FunctionUri, errors: CalloutErrors, timeoutMs: number, auth: CalloutAuth) {
    this.#uri = uri;
    this.#errors = errors;
    this.#timeoutMs = timeoutMs;
    this.#auth = auth;
  }

  async run(ctx: Context): Promise<'success'> {
    const endpoint = this.#uri.resolve(ctx);
    const req = ctx.request;
    const headers = forwardHeaders(req, endpoint.authority, this.#auth.omit);
    const path = this.#auth.prepare(headers, req, endpoint);
    const reply = await callOut(
      endpoint.pool,
      endpoint.origin,
      { method: req.method, path, headers, body: req.body },
      this.#timeoutMs,
      ctx,
      this.#errors,
    );
    applyReply(ctx, reply);
    return 'success';
  }

  close(): void {
    this.#uri.close();
  }
}

/**
 * The client's headers as a proxy forwards them (hop-by-hop fields dropped,
 * X-Forwarded-* added) with Host set to the endpoint's authority, minus `omit`.
 */
export function forwardHeaders(req: RequestPart, authority: string, omit: ReadonlySet<string>): string[] {
  const all = buildRequestHeaders(req, authority);
  if (omit.size === 0) return all;
  const out: string[] = [];
  for (let i = 0; i < all.length; i += 2) {
    const name = all[i]!;
    if (!omit.has(name)) out.push(name, all[i + 1]!);
  }
  return out;
}

/** The endpoint's path with its own query (an Azure `code=…`, say) followed by the client's. */
export function endpointPath(endpoint: Endpoint, req: RequestPart): string {
  const own = endpoint.query;
  const client = req.rawQuery;
  const query = own === '' ? client : client === '' ? own : `${own}&${client}`;
  return query === '' ? endpoint.path : `${endpoint.path}?${query}`;
}
