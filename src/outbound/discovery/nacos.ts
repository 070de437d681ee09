import type { Logger } from '../../core/logger.js';
import { getJson, portOf, RegistryError } from './http-registry.js';
import { DiscoverySource, type Answer, type DiscoveredTarget } from './source.js';
import type { NacosDiscoveryOptions } from './spec.js';

interface NacosHost {
  ip?: unknown;
  port?: unknown;
  weight?: unknown;
  healthy?: unknown;
  enabled?: unknown;
}

/** Nacos weights are decimals (1.0 by default): kept to two places as integer shares. */
const WEIGHT_SCALE = 100;

/**
 * Nacos's open API `GET /nacos/v1/ns/instance/list?serviceName=…&healthyOnly=true` (with
 * `groupName` and `namespaceId`), polled every `refresh_s`: each host that is `healthy` and not
 * disabled is a target at `ip` on `port`, weighted by its `weight` (0 drains it).
 */
export class NacosSource extends DiscoverySource {
  readonly #options: NacosDiscoveryOptions;

  constructor(options: NacosDiscoveryOptions, logger: Logger) {
    super(`nacos:${options.service}`, logger);
    this.#options = options;
  }

  protected get maxRetryMs(): number {
    return this.#options.refreshS * 1000;
  }

  protected async lookup(signal: AbortSignal): Promise<Answer> {
    const { address, service, refreshS, group, namespaceId } = this.#options;
    const query = new URLSearchParams({ serviceName: service, groupName: group, healthyOnly: 'true' });
    if (namespaceId !== '') query.set('namespaceId', namespaceId);
    const url = `${address}/nacos/v1/ns/instance/list?${query.toString()}`;
    const { body } = await getJson(url, {}, Math.min(refreshS * 1000, 10_000), signal);
    const hosts = (body as { hosts?: unknown } | null)?.hosts;
    if (!Array.isArray(hosts)) throw new RegistryError(`${service}: the answer has no hosts list`);
    const targets: DiscoveredTarget[] = [];
    for (const h of hosts as NacosHost[]) {
      // healthyOnly asks the server; the flags are checked again in case it ignores the parameter.
      if (h.healthy !== true || h.enabled === false) continue;
      const port = portOf(h.port);
      if (typeof h.ip !== 'string' || h.ip === '' || port === undefined) continue;
      const weight =
        typeof h.weight === 'number' && h.weight >= 0 ? Math.round(h.weight * WEIGHT_SCALE) : WEIGHT_SCALE;
      targets.push({ host: h.ip, port, weight, priority: 0 });
    }
    return { targets, nextMs: refreshS * 1000 };
  }
}
