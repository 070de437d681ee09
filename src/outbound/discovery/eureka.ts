import type { Logger } from '../../core/logger.js';
import { getJson, portOf, RegistryError } from './http-registry.js';
import { DiscoverySource, type Answer, type DiscoveredTarget } from './source.js';
import type { EurekaDiscoveryOptions } from './spec.js';

/** A port object of Eureka's JSON: `{"$": 8080, "@enabled": "true"}`. */
interface EurekaPort {
  $?: unknown;
  '@enabled'?: unknown;
}

interface EurekaInstance {
  ipAddr?: unknown;
  hostName?: unknown;
  status?: unknown;
  port?: EurekaPort;
  securePort?: EurekaPort;
  metadata?: Record<string, unknown>;
}

/**
 * Eureka's `GET /eureka/apps/<app>` (JSON), polled every `refresh_s`: each instance whose
 * `status` is `UP` is a target at `ipAddr` (else `hostName`) on its enabled `port` (else its
 * enabled `securePort`), weighted by `metadata.weight` when it is an integer (default 1).
 */
export class EurekaSource extends DiscoverySource {
  readonly #options: EurekaDiscoveryOptions;

  constructor(options: EurekaDiscoveryOptions, logger: Logger) {
    super(`eureka:${options.service}`, logger);
    this.#options = options;
  }

  protected get maxRetryMs(): number {
    return this.#options.refreshS * 1000;
  }

  protected async lookup(signal: AbortSignal): Promise<Answer> {
    const { address, service, refreshS } = this.#options;
    const url = `${address}/eureka/apps/${encodeURIComponent(service)}`;
    const { body } = await getJson(url, {}, Math.min(refreshS * 1000, 10_000), signal);
    const application = (body as { application?: { instance?: unknown } } | null)?.application;
    if (application === undefined) throw new RegistryError(`${service}: the answer has no application`);
    // Eureka's JSON (converted from XML) gives a single instance as an object, several as a list.
    const raw = application.instance;
    const instances = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]) as EurekaInstance[];
    const targets: DiscoveredTarget[] = [];
    for (const instance of instances) {
      if (instance.status !== 'UP') continue;
      const host = text(instance.ipAddr) ?? text(instance.hostName);
      const port = enabledPort(instance.port) ?? enabledPort(instance.securePort);
      if (host === undefined || port === undefined) continue;
      const weight = Number(instance.metadata?.weight ?? 1);
      targets.push({ host, port, weight: Number.isInteger(weight) && weight >= 0 ? weight : 1, priority: 0 });
    }
    return { targets, nextMs: refreshS * 1000 };
  }
}

function enabledPort(port: EurekaPort | undefined): number | undefined {
  if (port === undefined) return undefined;
  const enabled = port['@enabled'];
  if (enabled !== true && enabled !== 'true') return undefined;
  return portOf(port.$);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
