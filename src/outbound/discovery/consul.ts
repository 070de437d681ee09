import type { Logger } from '../../core/logger.js';
import { getJson, portOf, RegistryError } from './http-registry.js';
import { DiscoverySource, type Answer, type DiscoveredTarget } from './source.js';
import type { ConsulDiscoveryOptions } from './spec.js';

/** A blocking query that answered sooner than this without a new index is not blocking: wait. */
const MIN_QUERY_MS = 1000;

interface HealthEntry {
  Node?: { Address?: unknown };
  Service?: { Address?: unknown; Port?: unknown; Weights?: { Passing?: unknown } };
}

/**
 * Consul's health endpoint, `GET /v1/health/service/<service>?passing` (instances whose checks
 * all pass), as blocking queries: each one carries the `X-Consul-Index` of the previous answer
 * and `wait=<refresh_s>s`, so Consul holds it until the service changes or the wait elapses.
 * The target is `Service.Address` (or the node's address when empty) on `Service.Port`, weighted
 * by `Service.Weights.Passing`. An index that goes backwards starts over from 0, as Consul's
 * documentation asks.
 */
export class ConsulSource extends DiscoverySource {
  readonly #options: ConsulDiscoveryOptions;
  #index = 0;

  constructor(options: ConsulDiscoveryOptions, logger: Logger) {
    super(`consul:${options.service}`, logger);
    this.#options = options;
  }

  protected get maxRetryMs(): number {
    return this.#options.refreshS * 1000;
  }

  protected async lookup(signal: AbortSignal): Promise<Answer> {
    const { address, service, refreshS, token } = this.#options;
    const query = new URLSearchParams({ wait: `${refreshS}s` });
    if (this.#index > 0) query.set('index', String(this.#index));
    const url = `${address}/v1/health/service/${encodeURIComponent(service)}?passing&${query.toString()}`;
    const startedAt = Date.now();
    // Consul adds up to wait/16 of jitter to a blocking query.
    const timeoutMs = refreshS * 1000 * (17 / 16) + 5000;
    const answer = await getJson(url, token === '' ? {} : { 'x-consul-token': token }, timeoutMs, signal);
    const index = Number(answer.headers.get('x-consul-index'));
    const previous = this.#index;
    this.#index = Number.isInteger(index) && index > 0 && index >= previous ? index : 0;
    if (!Array.isArray(answer.body)) throw new RegistryError(`${service}: the answer is not a list`);
    const targets: DiscoveredTarget[] = [];
    for (const entry of answer.body as HealthEntry[]) {
      const svc = entry.Service;
      const port = portOf(svc?.Port);
      const host = nonEmpty(svc?.Address) ?? nonEmpty(entry.Node?.Address);
      if (host === undefined || port === undefined) continue;
      const passing = svc?.Weights?.Passing;
      const weight = typeof passing === 'number' && Number.isInteger(passing) && passing >= 0 ? passing : 1;
      targets.push({ host: host.replace(/^\[|\]$/g, ''), port, weight, priority: 0 });
    }
    const blocked = this.#index !== previous || Date.now() - startedAt >= MIN_QUERY_MS;
    return { targets, nextMs: blocked ? 0 : MIN_QUERY_MS };
  }
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
