import { ConfigError } from '../../core/plugin.js';
import { ipVersion } from '../../runtime/ip-version.js';
import { parseDnsServer } from './dns-wire.js';

/** `discovery: {type: dns}`, checked: either `host` + `port` (A/AAAA) or `srv`. */
export interface DnsDiscoveryOptions {
  readonly type: 'dns';
  readonly host: string | null;
  readonly port: number;
  readonly srv: string | null;
  /** `ip:port` strings; empty: the system's resolvers (/etc/resolv.conf). */
  readonly resolvers: readonly string[];
  readonly minTtlS: number;
  readonly maxTtlS: number;
}

/** `discovery: {type: consul | eureka | nacos}`, checked. */
export interface RegistryDiscoveryOptions<T extends 'consul' | 'eureka' | 'nacos'> {
  readonly type: T;
  /** Base URL, without a trailing slash. */
  readonly address: string;
  readonly service: string;
  /** Eureka, Nacos: the poll interval; Consul: the `wait` of each blocking query. */
  readonly refreshS: number;
  /** Consul: the ACL token sent as X-Consul-Token ('' = none). */
  readonly token: string;
  /** Nacos: the group and namespace asked about. */
  readonly group: string;
  readonly namespaceId: string;
}

export type ConsulDiscoveryOptions = RegistryDiscoveryOptions<'consul'>;
export type EurekaDiscoveryOptions = RegistryDiscoveryOptions<'eureka'>;
export type NacosDiscoveryOptions = RegistryDiscoveryOptions<'nacos'>;

/** `discovery: {type: kubernetes}`, checked: a Service's EndpointSlices. */
export interface KubernetesDiscoveryOptions {
  readonly type: 'kubernetes';
  readonly namespace: string;
  /** The Service name (the slices' `kubernetes.io/service-name` label). */
  readonly service: string;
  /** A port name (looked up in each slice's `ports`) or an endpoint port number. */
  readonly port: string | number;
  /** A kubeconfig file; null: in-cluster credentials, else $KUBECONFIG or ~/.kube/config. */
  readonly kubeconfig: string | null;
}

export type DiscoverySpec =
  | DnsDiscoveryOptions
  | ConsulDiscoveryOptions
  | EurekaDiscoveryOptions
  | NacosDiscoveryOptions
  | KubernetesDiscoveryOptions;

export const DISCOVERY_DEFAULTS = {
  minTtlS: 1,
  maxTtlS: 300,
  refreshS: 30,
  nacosGroup: 'DEFAULT_GROUP',
} as const;

export const DISCOVERY_TYPES = ['dns', 'consul', 'eureka', 'nacos', 'kubernetes'] as const;

const DNS_KEYS = new Set(['type', 'host', 'port', 'srv', 'resolvers', 'min_ttl_s', 'max_ttl_s']);
const REGISTRY_KEYS: Readonly<Record<string, ReadonlySet<string>>> = {
  consul: new Set(['type', 'address', 'service', 'refresh_s', 'token']),
  eureka: new Set(['type', 'address', 'service', 'refresh_s']),
  nacos: new Set(['type', 'address', 'service', 'refresh_s', 'group', 'namespace_id']),
  kubernetes: new Set(['type', 'service', 'port', 'kubeconfig']),
};

/**
 * The upstream node's `discovery` key (docs/service-discovery.md); per-type rules are checked in code. No
 * `default`s here: the schema would add them to every type, and a key of another type is an error.
 */
export const discoverySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description: 'Where the targets come from instead of `targets` (docs/service-discovery.md).',
  properties: {
    type: { type: 'string', enum: [...DISCOVERY_TYPES] },
    host: {
      type: 'string',
      minLength: 1,
      description: 'dns: the name whose A/AAAA records are the targets.',
    },
    port: {
      type: ['integer', 'string'],
      description:
        'dns with host: the targets’ port; kubernetes: a port name of the EndpointSlices, or a port number.',
    },
    srv: {
      type: 'string',
      minLength: 1,
      description:
        'dns: an SRV name (_http._tcp.example.com); ports, priorities and weights come from the records.',
    },
    resolvers: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      description:
        "dns: servers as 'ip', 'ip:port' or '[ipv6]:port'. Default: the system's (/etc/resolv.conf).",
    },
    min_ttl_s: {
      type: 'integer',
      minimum: 1,
      description: `dns: a shorter record TTL is raised to this. Default ${DISCOVERY_DEFAULTS.minTtlS}.`,
    },
    max_ttl_s: {
      type: 'integer',
      minimum: 1,
      description: `dns: a longer record TTL is lowered to this. Default ${DISCOVERY_DEFAULTS.maxTtlS}.`,
    },
    address: {
      type: 'string',
      minLength: 1,
      description: 'consul, eureka, nacos: the registry base URL (http://127.0.0.1:8500).',
    },
    service: {
      type: 'string',
      minLength: 1,
      description: 'consul, eureka, nacos: the service (Eureka: app) name; kubernetes: namespace/name.',
    },
    refresh_s: {
      type: 'integer',
      minimum: 1,
      description: `eureka, nacos: the poll interval; consul: the wait of each blocking query. Default ${DISCOVERY_DEFAULTS.refreshS}.`,
    },
    token: { type: 'string', description: 'consul: ACL token (X-Consul-Token).' },
    kubeconfig: {
      type: 'string',
      minLength: 1,
      description:
        'kubernetes: a kubeconfig file. Default: in-cluster credentials, else $KUBECONFIG or ~/.kube/config.',
    },
    group: { type: 'string', minLength: 1, description: 'nacos: groupName. Default DEFAULT_GROUP.' },
    namespace_id: {
      type: 'string',
      minLength: 1,
      description: 'nacos: namespaceId. Default: the public namespace.',
    },
  },
} as const;

const SRV_NAME = /^_[A-Za-z0-9-]+\._(tcp|udp|tls|sctp)\.[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?\.?$/;
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?)*\.?$/;

/**
 * Checks an upstream's `discovery` block; errors name the key (`discovery.port`). Keys of another
 * type are refused rather than ignored, so a typo or a copied block cannot pass silently.
 */
export function resolveDiscovery(raw: unknown): DiscoverySpec {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError('discovery', 'must be an object with a type');
  const config = raw as Record<string, unknown>;
  const type = config.type;
  if (typeof type !== 'string' || !(DISCOVERY_TYPES as readonly string[]).includes(type))
    throw new ConfigError('discovery.type', `must be one of ${DISCOVERY_TYPES.join(', ')}`);
  const allowed = type === 'dns' ? DNS_KEYS : REGISTRY_KEYS[type]!;
  for (const key of Object.keys(config)) {
    if (!allowed.has(key)) throw new ConfigError(`discovery.${key}`, `is not a key of type ${type}`);
  }
  if (type === 'dns') return resolveDns(config);
  if (type === 'kubernetes') return resolveKubernetes(config);
  return resolveRegistry(type as 'consul' | 'eureka' | 'nacos', config);
}

function resolveDns(config: Record<string, unknown>): DnsDiscoveryOptions {
  const host = optionalString(config, 'host');
  const srv = optionalString(config, 'srv');
  if ((host === null) === (srv === null))
    throw new ConfigError(
      host === null ? 'discovery.host' : 'discovery.srv',
      'set one of host (with port) or srv',
    );
  let port = 0;
  if (host !== null) {
    if (ipVersion(host.replace(/^\[|\]$/g, '')) !== 0)
      throw new ConfigError('discovery.host', 'is an IP address: list it under targets instead');
    if (!HOSTNAME.test(host)) throw new ConfigError('discovery.host', 'must be a DNS name');
    if (
      typeof config.port !== 'number' ||
      !Number.isInteger(config.port) ||
      config.port < 1 ||
      config.port > 65535
    )
      throw new ConfigError('discovery.port', 'is required with host: an integer between 1 and 65535');
    port = config.port;
  } else {
    if (config.port !== undefined)
      throw new ConfigError('discovery.port', 'is not used with srv: the port comes from each SRV record');
    if (!SRV_NAME.test(srv!))
      throw new ConfigError('discovery.srv', 'must be an SRV name like _http._tcp.example.com');
  }
  const resolvers: string[] = [];
  if (config.resolvers !== undefined) {
    if (!Array.isArray(config.resolvers)) throw new ConfigError('discovery.resolvers', 'must be a list');
    config.resolvers.forEach((entry: unknown, i) => {
      if (typeof entry !== 'string' || parseDnsServer(entry) === undefined)
        throw new ConfigError(`discovery.resolvers[${i}]`, "must be 'ip', 'ip:port' or '[ipv6]:port'");
      resolvers.push(entry);
    });
  }
  const minTtlS = positiveInteger(config, 'min_ttl_s', DISCOVERY_DEFAULTS.minTtlS);
  const maxTtlS = positiveInteger(config, 'max_ttl_s', DISCOVERY_DEFAULTS.maxTtlS);
  if (minTtlS > maxTtlS) throw new ConfigError('discovery.min_ttl_s', `is above max_ttl_s (${maxTtlS})`);
  return { type: 'dns', host, port, srv, resolvers, minTtlS, maxTtlS };
}

function resolveRegistry<T extends 'consul' | 'eureka' | 'nacos'>(
  type: T,
  config: Record<string, unknown>,
): RegistryDiscoveryOptions<T> {
  const address = optionalString(config, 'address');
  if (address === null) throw new ConfigError('discovery.address', `is required with type ${type}`);
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new ConfigError('discovery.address', 'must be an http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError('discovery.address', 'must be an http:// or https:// URL');
  if (url.search !== '' || url.hash !== '')
    throw new ConfigError('discovery.address', 'is a base URL: no query or fragment');
  const service = optionalString(config, 'service');
  if (service === null) throw new ConfigError('discovery.service', `is required with type ${type}`);
  return {
    type,
    address: address.replace(/\/+$/, ''),
    service,
    refreshS: positiveInteger(config, 'refresh_s', DISCOVERY_DEFAULTS.refreshS),
    token: typeof config.token === 'string' ? config.token : '',
    group: optionalString(config, 'group') ?? DISCOVERY_DEFAULTS.nacosGroup,
    namespaceId: optionalString(config, 'namespace_id') ?? '',
  };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/;

function resolveKubernetes(config: Record<string, unknown>): KubernetesDiscoveryOptions {
  const service = optionalString(config, 'service');
  if (service === null) throw new ConfigError('discovery.service', 'is required with type kubernetes');
  const parts = service.split('/');
  if (parts.length !== 2 || !DNS_LABEL.test(parts[0]!) || !DNS_LABEL.test(parts[1]!))
    throw new ConfigError('discovery.service', 'must be namespace/name (lowercase DNS labels)');
  const port = config.port;
  if (typeof port === 'number') {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new ConfigError('discovery.port', 'must be a port name or an integer between 1 and 65535');
  } else if (typeof port !== 'string' || !PORT_NAME.test(port))
    throw new ConfigError('discovery.port', 'is required: a port name of the Service (http) or a number');
  return {
    type: 'kubernetes',
    namespace: parts[0]!,
    service: parts[1]!,
    port,
    kubeconfig: optionalString(config, 'kubeconfig'),
  };
}

function optionalString(config: Record<string, unknown>, key: string): string | null {
  const value = config[key];
  if (value === undefined) return null;
  if (typeof value !== 'string' || value === '')
    throw new ConfigError(`discovery.${key}`, 'must be a non-empty string');
  return value;
}

function positiveInteger(config: Record<string, unknown>, key: string, fallback: number): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new ConfigError(`discovery.${key}`, 'must be an integer ≥ 1');
  return value;
}
