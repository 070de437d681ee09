import { formatAddress, type TargetSpec } from '../target.js';
import type { DiscoveredTarget } from './source.js';

/**
 * The pool's targets for a discovery answer: one per address. An address found twice (two SRV
 * names on one host and port) keeps its most preferred priority, with the weights of the records
 * of that priority added up.
 */
export function toTargetSpecs(found: readonly DiscoveredTarget[]): TargetSpec[] {
  const byAddress = new Map<string, TargetSpec>();
  for (const t of found) {
    const address = formatAddress(t.host, t.port);
    const seen = byAddress.get(address);
    if (seen === undefined || t.priority < (seen.priority ?? 0)) {
      byAddress.set(address, { host: t.host, port: t.port, weight: t.weight, priority: t.priority });
    } else if (t.priority === seen.priority) {
      seen.weight += t.weight;
    }
  }
  return [...byAddress.values()].filter((t) => t.weight > 0);
}
