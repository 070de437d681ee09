import type { IncomingHttpHeaders } from 'node:http';
import type { Context } from '../../core/context.js';
import { NodeError, type KnownErrorCode } from '../../core/errors.js';
import { classifyFailure } from '../../outbound/classify.js';
import { exchange, type ExchangeLimits } from '../../outbound/exchange.js';
import { acquirePool, type PoolLease } from '../../outbound/pool-registry.js';
import type { TlsMaterial } from '../../tls/client.js';
import { calloutTls, type CalloutTlsConfig } from '../callout-tls.js';
import { ConfigError } from '../../core/plugin.js';

/** One URL of an identity or authorization provider, resolved at compile time. */
export interface ProviderEndpoint {
  readonly url: URL;
  /** Path plus `?query`, as it goes on the request line. */
  readonly path: string;
  /** `origin + pathname`, for error metadata and logs (never the query: it may carry secrets). */
  readonly where: string;
  readonly pool: PoolLease['pool'];
}

export interface ProviderRequest {
  method: 'GET' | 'POST';
  /** Defaults to the endpoint's own path. */
  path?: string;
  /** Flat `[name, value, …]` list. */
  headers: string[];
  body: Buffer | string | null;
}

export interface ProviderAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface ProviderClientOptions {
  /** Catalog code of this plugin's provider failure (502 `provider_error`). */
  code: KnownErrorCode;
  /** Provider name for messages: `OPA`, `Keycloak`… */
  name: string;
  /** Whole-call deadline in ms: connect, request, headers and body. */
  timeoutMs: number;
  sslVerify: boolean;
  /** The plugin's `tls` key (docs/outbound-tls.md). */
  tls?: CalloutTlsConfig | undefined;
}

/**
 * The outbound side of a provider plugin: endpoints parsed and pools leased
 * at compile time, one whole-call deadline per callout, and every way a
 * callout can fail mapped to the plugin's provider-failure code (docs/plugins/README.md
 * "Provider failures": 502 `provider_error`, no challenge header). A client
 * that went away is reported as such, not blamed on the provider.
 */
export class ProviderClient {
  readonly #options: ProviderClientOptions;
  readonly #limits: ExchangeLimits;
  readonly #leases = new Map<string, PoolLease>();
  #tls: TlsMaterial | undefined;

  constructor(options: ProviderClientOptions) {
    this.#options = options;
    this.#limits = { deadlineMs: options.timeoutMs, idleMs: options.timeoutMs, streaming: false };
  }

  /** Parses an `http(s)://` URL from config key `key`; endpoints on one origin share a pool. */
  endpoint(raw: string, key: string): ProviderEndpoint {
    const text = raw.trim();
    if (text === '') throw new ConfigError(key, 'must not be blank');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new ConfigError(key, `'${text}' is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(key, `must be an http:// or https:// URL (got ${url.protocol})`);
    }
    let lease = this.#leases.get(url.origin);
    if (lease === undefined) {
      const tls = url.protocol === 'https:' ? this.#tlsMaterial() : null;
      lease = acquirePool({ origin: url.origin, tls, connectTimeoutMs: this.#options.timeoutMs });
      this.#leases.set(url.origin, lease);
    }
    return {
      url,
      path: `${url.pathname}${url.search}`,
      where: `${url.origin}${url.pathname}`,
      pool: lease.pool,
    };
  }

  /**
   * Sends one request and resolves with the whole answer, whatever its status.
   * Rejects with the provider-failure NodeError when no answer arrived in time,
   * or with `UPSTREAM_CLIENT_ABORTED` when `signal` (the client's, `ctx.signal`)
   * fired first. Calls shared by several requests pass `null`.
   */
  async call(
    signal: AbortSignal | null,
    endpoint: ProviderEndpoint,
    request: ProviderRequest,
  ): Promise<ProviderAnswer> {
    const timeout = this.#options.timeoutMs;
    const abort = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      abort.abort();
    }, timeout);
    const onClientGone = (): void => abort.abort();
    signal?.addEventListener('abort', onClientGone, { once: true });
    const body = request.body;
    try {
      const answer = await exchange(
        endpoint.pool,
        {
          method: request.method,
          path: request.path ?? endpoint.path,
          headers: request.headers,
          body: typeof body === 'string' ? Buffer.from(body) : body,
        },
        this.#limits,
        abort.signal,
        null,
      );
      return { status: answer.status, headers: answer.headers, body: answer.body ?? Buffer.alloc(0) };
    } catch (err) {
      const failure = classifyFailure(err);
      if (!expired && failure.code === 'UPSTREAM_CLIENT_ABORTED') {
        throw new NodeError(failure.code, failure.reason);
      }
      const reason = expired ? `no answer within ${timeout} ms` : failure.reason;
      throw this.failure(`${this.#options.name} callout failed: ${reason}`, endpoint, err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onClientGone);
    }
  }

  /** The provider-failure error for an answer that is no decision (wrong status, unparseable). */
  failure(message: string, endpoint: ProviderEndpoint, cause?: unknown): NodeError {
    return new NodeError(this.#options.code, message, {
      metadata: { endpoint: endpoint.where },
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /** Releases the pools; called from the node's `close`. */
  close(): void {
    for (const lease of this.#leases.values()) lease.release();
    this.#leases.clear();
  }

  #tlsMaterial(): TlsMaterial {
    this.#tls ??= calloutTls(this.#options.sslVerify, this.#options.tls);
    return this.#tls;
  }
}

/** The body parsed as JSON, or `undefined` when it is not JSON. */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The value as a plain object, or `undefined`. */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A string field of an object, or `undefined` when absent, empty or not a string. */
export function stringField(value: unknown, name: string): string | undefined {
  const field = asObject(value)?.[name];
  return typeof field === 'string' && field !== '' ? field : undefined;
}

/** The bearer token of the Authorization header, `Bearer ` prefix optional (as APISIX reads it). */
export function bearerToken(ctx: Context): string | undefined {
  const raw = ctx.request.header('authorization')?.trim();
  if (raw === undefined || raw === '') return undefined;
  const token = /^bearer\s+/i.test(raw) ? raw.replace(/^bearer\s+/i, '').trim() : raw;
  return token === '' ? undefined : token;
}

/** Sets the consumer identity an external provider vouched for, and `message.consumer.auth_type`. */
export function attachIdentity(ctx: Context, name: string, authType: string): void {
  ctx.setConsumer({ name });
  ctx.message['consumer.auth_type'] = authType;
}
