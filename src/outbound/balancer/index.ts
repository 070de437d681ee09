import type { Target } from '../target.js';
import { ConsistentHashBalancer, type HashKey } from './chash.js';
import { EwmaBalancer } from './ewma.js';
import { LeastConnectionsBalancer } from './least-connections.js';
import { RoundRobinBalancer } from './round-robin.js';
import type { Balancer } from './types.js';

export type BalancerKind = 'round_robin' | 'least_connections' | 'ip_hash' | 'chash' | 'ewma';

/** Canonical names, in the order error messages list them. */
export const BALANCER_KINDS: readonly BalancerKind[] = [
  'round_robin',
  'least_connections',
  'ip_hash',
  'chash',
  'ewma',
];

/** Accepted spellings: the canonical names, the reference's dashed ones, APISIX's. */
const SPELLINGS: Readonly<Record<string, BalancerKind>> = {
  round_robin: 'round_robin',
  'round-robin': 'round_robin',
  roundrobin: 'round_robin',
  least_connections: 'least_connections',
  'least-conn': 'least_connections',
  least_conn: 'least_connections',
  ip_hash: 'ip_hash',
  'ip-hash': 'ip_hash',
  chash: 'chash',
  ewma: 'ewma',
};

export function balancerKind(name: string): BalancerKind | undefined {
  return Object.hasOwn(SPELLINGS, name) ? SPELLINGS[name] : undefined;
}

const clientIp: HashKey = (ctx) => ctx.request.remoteAddress;

/** Builds the balancer; `hashKey` is used by `chash` (ip_hash always hashes the client IP, without port). */
export function createBalancer(kind: BalancerKind, targets: readonly Target[], hashKey: HashKey): Balancer {
  switch (kind) {
    case 'round_robin':
      return new RoundRobinBalancer(targets);
    case 'least_connections':
      return new LeastConnectionsBalancer(targets);
    case 'ip_hash':
      return new ConsistentHashBalancer(targets, clientIp);
    case 'chash':
      return new ConsistentHashBalancer(targets, hashKey);
    case 'ewma':
      return new EwmaBalancer(targets);
  }
}
