import { AsyncLocalStorage } from 'node:async_hooks';
import { Agent, fetch as undiciFetch, Response as UndiciResponse } from 'undici';
import { NodeError } from '../../../core/errors.js';
import type { TlsMaterial } from '../../../tls/client.js';
import { undiciConnect } from '../../../tls/undici-connect.js';

/** docs/plugins/openid-connect.md: 502 `provider_error` on the error port, no challenge header. */
export function providerError(message: string, endpoint: URL | string, cause?: unknown): NodeError {
  return new NodeError('OIDC_PROVIDER_ERROR', message, {
    metadata: { endpoint: String(endpoint) },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The fetch signature openid-client and jose call through their `customFetch` hooks. */
export type ProviderFetchFn = (
  url: string,
  options: { method?: string; headers?: unknown; body?: unknown; redirect?: string; signal?: AbortSignal },
) => Promise<Response>;

/**
 * The client's abort signal of the request a provider call is made for, so a
 * departing client stops its own calls. Shared fetches (discovery, JWKS) run
 * outside it: one departing client must not fail a fetch others wait on.
 */
const clientSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/** Runs `call` with the provider calls it makes bound to `signal` (the client's, `ctx.signal`). */
export function forClient<T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> {
  return clientSignal.run(signal, call);
}

/** Runs `call` with its provider calls detached from any client (shared fetches). */
export function shared<T>(call: () => Promise<T>): Promise<T> {
  return clientSignal.run(undefined, call);
}

/** Whether the client of the current provider call has gone away. */
export function clientGone(): boolean {
  return clientSignal.getStore()?.aborted === true;
}

/**
 * The identity provider as openid-client and jose reach it: their `customFetch`
 * hooks go through one undici Agent carrying this node's TLS material
 * (`ssl_verify` and `tls`: a CA, client certificate and key, server name;
 * verification stays on by default) and a connect timeout, and every call is bounded by
 * `timeoutMs` and by the client's signal. The agent is closed with the node.
 */
export class ProviderFetch {
  readonly timeoutMs: number;
  readonly #agent: Agent;

  constructor(tls: TlsMaterial | null, timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.#agent = new Agent({
      // The shared connector: a replaced client pair is presented on new connections (docs/outbound-tls.md).
      connect:
        tls === null ? { timeout: timeoutMs } : undiciConnect(tls, { timeout: timeoutMs, allowH2: false }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  /** For openid-client's `customFetch`: any status goes back to the library, which judges it. */
  readonly fetch: ProviderFetchFn = (url, options) => this.#send(url, options);

  /**
   * For jose's remote JWKS: a non-2xx answer or a body that is no key set is
   * a provider failure (502), never a verdict on the presented token.
   */
  readonly jwksFetch: ProviderFetchFn = async (url, options) => {
    const response = await this.#send(url, options);
    const text = await response.text();
    if (response.status < 200 || response.status > 299) {
      throw providerError(`JWKS answered ${response.status}`, url);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw providerError(`JWKS answered ${response.status} with a body that is not JSON`, url);
    }
    if (doc === null || typeof doc !== 'object' || !Array.isArray((doc as { keys?: unknown }).keys)) {
      throw providerError('JWKS is not a key set (no "keys" array)', url);
    }
    return new UndiciResponse(text, {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };

  close(): void {
    void this.#agent.close().catch(() => undefined);
  }

  async #send(url: string, options: Parameters<ProviderFetchFn>[1]): Promise<Response> {
    const signals = [AbortSignal.timeout(this.timeoutMs)];
    if (options.signal !== undefined) signals.push(options.signal);
    const client = clientSignal.getStore();
    if (client !== undefined) signals.push(client);
    const init = {
      ...(options as Record<string, unknown>),
      signal: AbortSignal.any(signals),
      dispatcher: this.#agent,
    };
    return await undiciFetch(url, init);
  }
}
