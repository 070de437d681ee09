import type { Context } from '../../core/context.js';
import { acquirePool, type OutboundDispatcher, type PoolLease } from '../../outbound/pool-registry.js';
import { loadTlsMaterial, type TlsMaterial } from '../../tls/client.js';
import type { PluginEnv, Template } from '../../core/plugin.js';
import type { CalloutErrors } from './callout.js';

/** A function endpoint resolved to a shared pool and the parts of its URI the request needs. */
export interface Endpoint {
  readonly pool: OutboundDispatcher;
  /** `scheme://host[:port]`: pool identity and error metadata (never carries the path or query). */
  readonly origin: string;
  /** `host[:port]` as the Host header carries it (default port omitted). */
  readonly authority: string;
  /** Percent-encoded path, `/` at least. */
  readonly path: string;
  /** Raw query of the URI without `?`, `''` when none. */
  readonly query: string;
}

export interface EndpointOptions {
  sslVerify: boolean;
  timeoutMs: number;
}

/** The parts of an endpoint URI a callout uses. */
export type EndpointParts = Omit<Endpoint, 'pool'>;

/** Parsed parts of an endpoint URI, or why it is unusable. */
type Parsed = EndpointParts | { problem: string };

/**
 * Parses an endpoint URI the same way at load and per request: an absolute
 * http(s) URI with a host and no credentials. The fragment is never sent.
 */
export function parseEndpointUri(text: string): Parsed {
  // Never percent-encoded or otherwise rewritten (docs/templates.md#ssrf-guidance): what is configured is what is called.
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: `'${text}' is not an absolute URI` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { problem: `scheme '${url.protocol.slice(0, -1)}' is not http or https` };
  }
  if (url.hostname === '') return { problem: 'the URI has no host' };
  if (url.username !== '' || url.password !== '') {
    return { problem: 'credentials in the URI are not supported; use the authorization block' };
  }
  return { origin: url.origin, authority: url.host, path: url.pathname || '/', query: url.search.slice(1) };
}

/** How many request-derived origins one node keeps pools for before releasing the oldest. */
const DYNAMIC_ORIGINS = 16;

/**
 * The templated `function_uri` of a node. A static URI (the advised form: a
 * literal, `${VAR}` or `{{env.NAME}}`) is parsed and its pool acquired once; a
 * URI built from request data is rendered and parsed per request, with a
 * warning at load (SSRF guidance).
 */
export class FunctionUri {
  readonly #errors: CalloutErrors;
  readonly #options: EndpointOptions;
  readonly #tls: TlsMaterial;
  readonly #template: Template | null;
  /** The static endpoint, when the URI is static and valid. */
  readonly #fixed: Endpoint | null;
  /** Why the static URI is unusable: every request fails with 502 (docs/configuration.md#errors-at-run-time). */
  readonly #problem: string | null;
  readonly #leases = new Map<string, PoolLease>();

  constructor(text: string, key: string, env: PluginEnv, options: EndpointOptions, errors: CalloutErrors) {
    this.#errors = errors;
    this.#options = options;
    this.#tls = calloutTls(options.sslVerify);
    const template = env.template(text, key);
    if (!template.isStatic) {
      env.warn(
        key,
        'is built from request data: a client can steer where the callout goes (SSRF); keep it static or use {{env.NAME}} / ${VAR}',
      );
      this.#template = template;
      this.#fixed = null;
      this.#problem = null;
      return;
    }
    this.#template = null;
    // A static template never reads the context.
    const parsed = parseEndpointUri(template.render(null as never));
    if ('problem' in parsed) {
      env.warn(key, `${parsed.problem}: every request will fail with ${errors.code} (502)`);
      this.#fixed = null;
      this.#problem = parsed.problem;
    } else {
      this.#fixed = this.#endpoint(parsed);
      this.#problem = null;
    }
  }

  /** The endpoint for this request; throws the 502 build error when the URI is unusable. */
  resolve(ctx: Context): Endpoint {
    if (this.#fixed !== null) return this.#fixed;
    if (this.#template === null) throw this.#errors.build(this.#problem ?? 'invalid function URI');
    const parsed = parseEndpointUri(this.#template.render(ctx));
    if ('problem' in parsed) throw this.#errors.build(parsed.problem);
    return this.#endpoint(parsed);
  }

  close(): void {
    for (const lease of this.#leases.values()) lease.release();
    this.#leases.clear();
  }

  #endpoint(parts: EndpointParts): Endpoint {
    let lease = this.#leases.get(parts.origin);
    if (lease === undefined) {
      if (this.#leases.size >= DYNAMIC_ORIGINS) {
        const [oldest, held] = this.#leases.entries().next().value!;
        this.#leases.delete(oldest);
        // Requests already on that pool finish: a released pool closes only after a grace period.
        held.release();
      }
      lease = leasePool(parts.origin, this.#tls, this.#options.timeoutMs);
      this.#leases.set(parts.origin, lease);
    }
    return { pool: lease.pool, ...parts };
  }
}

/** TLS settings of a callout: system roots, verification per `ssl_verify` (ignored for http origins). */
export function calloutTls(sslVerify: boolean): TlsMaterial {
  return loadTlsMaterial({ verify: sslVerify });
}

/** A counted reference to the process-wide pool of `origin`. */
export function leasePool(origin: string, tls: TlsMaterial, timeoutMs: number): PoolLease {
  return acquirePool({ origin, tls, connectTimeoutMs: timeoutMs });
}
