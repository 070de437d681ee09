import type { StoreConfig } from '../config/gateway.js';
import { interpolateEnv } from '../config/interpolate.js';
import type { ConfigIssue } from '../config/schema-validate.js';

/** How a store reaches Redis: one server, a master found through Sentinel, or a Redis Cluster. */
export type Topology = 'standalone' | 'sentinel' | 'cluster';
const TOPOLOGIES: readonly Topology[] = ['standalone', 'sentinel', 'cluster'];

/** A sentinel or a cluster seed node. */
export interface NodeAddress {
  host: string;
  port: number;
}

/** What sentinel and cluster stores add to a connection spec (docs/stores.md#sentinel-and-cluster). */
export interface TopologySpec {
  topology: Topology;
  /** Sentinels (sentinel) or seed nodes (cluster); empty for standalone. */
  nodes: NodeAddress[];
  /** Sentinel: the monitored master's name (`master_name`). */
  masterName: string | undefined;
  /** Sentinel: the password of the sentinels themselves, when they require one. */
  sentinelPassword: string | undefined;
  /** Credentials and TLS carried by the `urls` entries (the first that has them). */
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
}

/** Default port of an entry in `urls` without one: a sentinel's or a Redis node's. */
const DEFAULT_PORT: Record<Exclude<Topology, 'standalone'>, number> = { sentinel: 26379, cluster: 6379 };

/**
 * Checks `topology`, `urls`, `master_name` and `sentinel_password` of one
 * `stores:` entry. Standalone stores use `url`; sentinel and cluster stores
 * use `urls` instead (the reference reserves both keys for this).
 */
export function resolveTopology(
  config: StoreConfig,
  path: string,
  where: string,
  env: NodeJS.ProcessEnv,
  issues: ConfigIssue[],
): TopologySpec | undefined {
  const text = (value: string | undefined): string | undefined =>
    value === undefined ? undefined : interpolateEnv(value, env).trim();
  const raw = text(config.topology);
  const topology = (raw === undefined || raw === '' ? 'standalone' : raw) as Topology;
  if (!TOPOLOGIES.includes(topology)) {
    issues.push({
      path: `${path}.topology`,
      message: `${where}: topology '${raw ?? ''}' is not one of ${TOPOLOGIES.join(', ')}`,
    });
    return undefined;
  }
  const none: TopologySpec = {
    topology,
    nodes: [],
    masterName: undefined,
    sentinelPassword: undefined,
    username: undefined,
    password: undefined,
    tls: false,
  };
  const masterName = text(config.master_name);
  if (topology === 'standalone') {
    if (config.urls !== undefined)
      issues.push({
        path: `${path}.urls`,
        message: `${where}: urls needs topology sentinel or cluster; use url`,
      });
    if (masterName !== undefined)
      issues.push({ path: `${path}.master_name`, message: `${where}: master_name needs topology sentinel` });
    return none;
  }
  if (config.url !== undefined)
    issues.push({
      path: `${path}.url`,
      message: `${where}: a ${topology} store lists its ${topology === 'sentinel' ? 'sentinels' : 'seed nodes'} in urls; remove url`,
    });
  if (topology === 'sentinel' && (masterName === undefined || masterName === ''))
    issues.push({
      path: `${path}.master_name`,
      message: `${where}: master_name is required with topology sentinel`,
    });
  if (topology === 'cluster' && masterName !== undefined)
    issues.push({ path: `${path}.master_name`, message: `${where}: master_name needs topology sentinel` });
  if (!Array.isArray(config.urls) || config.urls.length === 0) {
    issues.push({
      path: `${path}.urls`,
      message: `${where}: urls must list at least one node for topology ${topology}`,
    });
    return undefined;
  }
  const spec: TopologySpec = {
    ...none,
    masterName,
    sentinelPassword: emptyToUndefined(text(config.sentinel_password)),
  };
  const schemes = new Set<string>();
  config.urls.forEach((entry, i) => {
    const at = `${path}.urls[${i}]`;
    const value = typeof entry === 'string' ? (text(entry) ?? '') : '';
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      issues.push({ path: at, message: `${where}: urls[${i}] is not a redis:// or rediss:// URL` });
      return;
    }
    if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
      issues.push({
        path: at,
        message: `${where}: urls[${i}] must be redis://host[:port] or rediss://host[:port]`,
      });
      return;
    }
    if (url.pathname !== '' && url.pathname !== '/') {
      issues.push({
        path: at,
        message: `${where}: urls[${i}]: a ${topology} store uses database 0; remove the path`,
      });
      return;
    }
    schemes.add(url.protocol);
    spec.nodes.push({
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port === '' ? DEFAULT_PORT[topology] : Number(url.port),
    });
    spec.username ??= emptyToUndefined(decodeURIComponent(url.username));
    spec.password ??= emptyToUndefined(decodeURIComponent(url.password));
  });
  if (schemes.size > 1)
    issues.push({
      path: `${path}.urls`,
      message: `${where}: urls mix redis:// and rediss://; use one scheme`,
    });
  spec.tls = schemes.has('rediss:');
  return spec;
}

function emptyToUndefined(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
