import { NodeError } from '../../../engine/errors.js';
import { classifyFailure } from '../../../outbound/classify.js';
import { exchange, type ExchangeLimits } from '../../../outbound/exchange.js';
import { acquirePool, type PoolLease } from '../../../outbound/pool-registry.js';
import type { TlsMaterial } from '../../../outbound/tls.js';

/** docs/plugins/openid-connect.md: 502 `provider_error` on the error port, no challenge header. */
export function providerError(message: string, endpoint: URL | string, cause?: unknown): NodeError {
  return new NodeError('OIDC_PROVIDER_ERROR', message, {
    metadata: { endpoint: String(endpoint) },
    ...(cause === undefined ? {} : { cause }),
  });
}

export interface ProviderCall {
  method: 'GET' | 'POST';
  url: URL;
  /** Flat `[name, value, …]` list. */
  headers?: string[];
  /** `application/x-www-form-urlencoded` body for POST. */
  form?: URLSearchParams;
  /** What the call is for, in error messages: `discovery`, `JWKS`, `token endpoint`… */
  what: string;
}

/**
 * The identity provider as seen through the shared outbound pools: one pool
 * lease per origin (discovery may name several), taken on first use and
 * released when the node is retired. Every call is bounded by `timeoutMs`;
 * every failure is a provider error, except the client going away.
 */
export class ProviderHttp {
  readonly #tls: TlsMaterial | null;
  readonly #timeoutMs: number;
  readonly #limits: ExchangeLimits;
  readonly #leases = new Map<string, PoolLease>();

  constructor(tls: TlsMaterial | null, timeoutMs: number) {
    this.#tls = tls;
    this.#timeoutMs = timeoutMs;
    this.#limits = { deadlineMs: timeoutMs, idleMs: timeoutMs, streaming: false };
  }

  /**
   * Sends `call` and parses a 2xx JSON object answer. `signal` is the client's
   * (per-request calls); shared fetches (discovery, JWKS) pass null so one
   * departing client does not fail the fetch others wait on.
   */
  async json(call: ProviderCall, signal: AbortSignal | null): Promise<Record<string, unknown>> {
    const { status, body } = await this.send(call, signal);
    return jsonAnswer(call, status, body);
  }

  /** Sends `call`; resolves with any status. */
  async send(call: ProviderCall, signal: AbortSignal | null): Promise<{ status: number; body: Buffer }> {
    const headers = ['accept', 'application/json', ...(call.headers ?? [])];
    let body: Buffer | null = null;
    if (call.form !== undefined) {
      body = Buffer.from(call.form.toString());
      headers.push('content-type', 'application/x-www-form-urlencoded');
    }
    const abort = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      abort.abort();
    }, this.#timeoutMs);
    const onClientGone = (): void => abort.abort();
    signal?.addEventListener('abort', onClientGone, { once: true });
    try {
      const answer = await exchange(
        this.#pool(call.url),
        { method: call.method, path: `${call.url.pathname}${call.url.search}`, headers, body },
        this.#limits,
        abort.signal,
        null,
      );
      return { status: answer.status, body: answer.body ?? Buffer.alloc(0) };
    } catch (err) {
      const failure = classifyFailure(err);
      if (!expired && failure.code === 'UPSTREAM_CLIENT_ABORTED') {
        throw new NodeError(failure.code, failure.reason);
      }
      const reason = expired ? `no answer within ${this.#timeoutMs} ms` : failure.reason;
      throw providerError(`${call.what} failed: ${reason}`, call.url, err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onClientGone);
    }
  }

  close(): void {
    for (const lease of this.#leases.values()) lease.release();
    this.#leases.clear();
  }

  #pool(url: URL) {
    let lease = this.#leases.get(url.origin);
    if (lease === undefined) {
      lease = acquirePool({ origin: url.origin, tls: this.#tls, connectTimeoutMs: this.#timeoutMs });
      this.#leases.set(url.origin, lease);
    }
    return lease.pool;
  }
}

/** A 2xx JSON object answer, or a provider error saying what was wrong with it. */
export function jsonAnswer(call: ProviderCall, status: number, body: Buffer): Record<string, unknown> {
  if (status < 200 || status > 299) {
    throw providerError(`${call.what} answered ${status}${errorHint(body)}`, call.url);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw providerError(`${call.what} answered ${status} with a body that is not JSON`, call.url);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw providerError(`${call.what} answered ${status} with JSON that is not an object`, call.url);
  }
  return doc as Record<string, unknown>;
}

/** An OAuth error answer's `error` field, for the log line. */
function errorHint(body: Buffer): string {
  try {
    const doc = JSON.parse(body.toString('utf8')) as { error?: unknown };
    return typeof doc.error === 'string' ? ` (${doc.error})` : '';
  } catch {
    return '';
  }
}
