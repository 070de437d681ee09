import type { StreamUpstreamConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { StreamPool } from './pool.js';

/**
 * Picks a TCP stream listener's pool by the TLS server name: an exact name
 * first, then a wildcard route (`*.example.com` covers `api.example.com`,
 * one label deep, not `example.com`), else the listener's own upstream.
 */
export class SniRouter {
  readonly fallback: StreamPool;
  readonly #exact = new Map<string, StreamPool>();
  readonly #wildcard = new Map<string, StreamPool>();

  constructor(
    fallback: StreamPool,
    routes: readonly { server_name: string; upstream: StreamUpstreamConfig }[],
    logger?: Logger,
    /** The listener's label: a route pool's discovery metrics name it `<label> sni <server_name>`. */
    label = '',
  ) {
    this.fallback = fallback;
    for (const route of routes) {
      const name = route.server_name.toLowerCase().replace(/\.$/, '');
      const pool = new StreamPool(route.upstream, logger, `${label} sni ${name}`.trim());
      if (name.startsWith('*.')) this.#wildcard.set(name.slice(1), pool);
      else this.#exact.set(name, pool);
    }
  }

  /** Stops the pools following their discovery sources (docs/stream.md#service-discovery). */
  close(): void {
    this.fallback.close();
    for (const pool of this.#exact.values()) pool.close();
    for (const pool of this.#wildcard.values()) pool.close();
  }

  /** True when some route depends on the server name (the ClientHello must be read first). */
  get routesByName(): boolean {
    return this.#exact.size > 0 || this.#wildcard.size > 0;
  }

  /** `name` is lowercase without a trailing dot, as the SNI parser gives it. */
  select(name: string | undefined): StreamPool {
    if (name === undefined) return this.fallback;
    const exact = this.#exact.get(name);
    if (exact !== undefined) return exact;
    const dot = name.indexOf('.');
    return (dot > 0 ? this.#wildcard.get(name.slice(dot)) : undefined) ?? this.fallback;
  }
}
