import { BALANCER_KINDS, balancerKind, type BalancerKind } from '../../outbound/balancer/index.js';
import type { HashKey } from '../../outbound/balancer/chash.js';
import { compileHashKey, HASH_ON_VARIABLES } from '../../outbound/balancer/hash-key.js';
import type { ActivePolicy } from '../../outbound/health/active.js';
import type { PassivePolicy } from '../../outbound/health/passive.js';
import { HEALTH_SCOPE_KEY, HealthRegistry } from '../../outbound/health/registry.js';
import { formatAddress, type TargetSpec } from '../../outbound/target.js';
import { discoverySchema, resolveDiscovery, type DiscoverySpec } from '../../outbound/discovery/spec.js';
import { DISCOVERY_SCOPE_KEY, DiscoveryRegistry } from '../../outbound/discovery/registry.js';
import { toTargetSpecs } from '../../outbound/discovery/targets.js';
import { loadTlsMaterial, TlsMaterialError, type TlsMaterial } from '../../tls/client.js';
import { GrpcUpstream } from '../../outbound/grpc/grpc-upstream.js';
import { UpstreamPool, type PassHost, type UpstreamTargetState } from '../../outbound/upstream-pool.js';
import type { Context } from '../../core/context.js';
import {
  ConfigError,
  definePlugin,
  READS_FILE,
  type NodeInstance,
  type PluginEnv,
} from '../../core/plugin.js';

export type { UpstreamTargetState } from '../../outbound/upstream-pool.js';

export interface UpstreamTargetConfig {
  host: string;
  port: number;
  weight?: number;
}

export interface UpstreamConfig {
  /** One of `targets` or `discovery`. */
  targets?: UpstreamTargetConfig[];
  discovery?: Record<string, unknown>;
  load_balancing?: string;
  /** Legacy spelling of `load_balancing`. */
  load_balancer?: string;
  hash_on?: string;
  timeout_ms?: number;
  stream_idle_timeout_ms?: number;
  retries?: number;
  health_check?: {
    passive?: { max_fails?: number; fail_timeout_seconds?: number };
    active?: {
      type?: 'http' | 'grpc';
      grpc_service?: string;
      path?: string;
      interval_ms?: number;
      timeout_ms?: number;
      healthy_statuses?: number[];
      unhealthy_threshold?: number;
      healthy_threshold?: number;
    };
  };
  pass_host?: 'pass' | 'node' | 'rewrite';
  upstream_host?: string;
  scheme?: Scheme;
  /** true, or the TLS options (which imply true). */
  tls?: boolean | UpstreamTlsConfig;
  ssl_verify?: boolean;
  ca_cert_path?: string;
  client_cert_path?: string;
  client_key_path?: string;
  client_key_password?: string;
}

export interface UpstreamTlsConfig {
  /** PEM CA bundle, inline, that replaces the system roots (instead of ca_cert_path). */
  ca_pem?: string;
  /** Name sent as SNI and checked in the target's certificate (default: the Host sent). */
  server_name?: string;
}

const DEFAULTS = {
  timeoutMs: 60_000,
  idleMs: 60_000,
  hashOn: 'remote_addr',
  maxFails: 3,
  failTimeoutSeconds: 10,
  activePath: '/',
  activeIntervalMs: 5_000,
  activeTimeoutMs: 2_000,
  healthyStatuses: [200, 302],
  unhealthyThreshold: 3,
  healthyThreshold: 2,
} as const;

/** http/https: HTTP (h1, or h2 by ALPN); grpc/grpcs: gRPC relayed over HTTP/2 (docs/grpc.md). */
type Scheme = 'http' | 'https' | 'grpc' | 'grpcs';
const TLS_SCHEMES: ReadonlySet<Scheme> = new Set(['https', 'grpcs']);

const TLS_KEYS = { ca: 'ca_cert_path', cert: 'client_cert_path', key: 'client_key_path' } as const;

const targetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['host', 'port'],
  properties: {
    host: { type: 'string', minLength: 1, description: 'Hostname or IP address (IPv6 without brackets).' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    weight: {
      type: 'integer',
      minimum: 0,
      default: 1,
      description: 'Share of traffic; 0 drains the target.',
    },
  },
} as const;

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    targets: {
      type: 'array',
      minItems: 1,
      items: targetSchema,
      description: 'The backend pool. One of targets or discovery.',
    },
    discovery: discoverySchema,
    load_balancing: {
      type: 'string',
      description:
        'round_robin (smooth weighted) | least_connections | ip_hash | chash | ewma; also round-robin, least-conn. Default round_robin.',
    },
    load_balancer: { type: 'string', description: 'Legacy spelling of load_balancing.' },
    hash_on: {
      type: 'string',
      default: DEFAULTS.hashOn,
      description: `chash key: ${HASH_ON_VARIABLES.join(', ')}.`,
    },
    timeout_ms: {
      type: 'integer',
      minimum: 1,
      default: DEFAULTS.timeoutMs,
      description: 'Deadline for connect + request + response headers, per attempt.',
    },
    stream_idle_timeout_ms: {
      type: 'integer',
      minimum: 0,
      default: DEFAULTS.idleMs,
      description: 'Longest silence between response body chunks (streamed or buffered); 0 disables.',
    },
    retries: {
      type: 'integer',
      minimum: 0,
      description:
        'Extra attempts on another target after a connect failure (grpc/grpcs: UNAVAILABLE before the first byte). Default: targets - 1.',
    },
    health_check: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        passive: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            max_fails: { type: 'integer', minimum: 0, default: DEFAULTS.maxFails },
            fail_timeout_seconds: {
              type: 'number',
              exclusiveMinimum: 0,
              default: DEFAULTS.failTimeoutSeconds,
            },
          },
        },
        active: {
          type: 'object',
          additionalProperties: false,
          properties: {
            type: {
              type: 'string',
              enum: ['http', 'grpc'],
              description:
                'http: GET path, judged by healthy_statuses; grpc: grpc.health.v1.Health/Check, SERVING = healthy (docs/grpc.md). Default grpc for scheme grpc/grpcs, else http.',
            },
            grpc_service: {
              type: 'string',
              description: "type grpc: the service name asked about. Default '' (the whole server).",
            },
            path: { type: 'string', pattern: '^/', default: DEFAULTS.activePath },
            interval_ms: { type: 'integer', minimum: 10, default: DEFAULTS.activeIntervalMs },
            timeout_ms: { type: 'integer', minimum: 1, default: DEFAULTS.activeTimeoutMs },
            healthy_statuses: {
              type: 'array',
              minItems: 1,
              items: { type: 'integer', minimum: 100, maximum: 599 },
              default: DEFAULTS.healthyStatuses,
            },
            unhealthy_threshold: { type: 'integer', minimum: 1, default: DEFAULTS.unhealthyThreshold },
            healthy_threshold: { type: 'integer', minimum: 1, default: DEFAULTS.healthyThreshold },
          },
        },
      },
    },
    pass_host: { type: 'string', enum: ['pass', 'node', 'rewrite'], default: 'node' },
    upstream_host: { type: 'string', minLength: 1, description: "Host header when pass_host is 'rewrite'." },
    scheme: {
      type: 'string',
      enum: ['http', 'https', 'grpc', 'grpcs'],
      description:
        'http | https; grpc (HTTP/2 cleartext, prior knowledge) and grpcs (TLS, ALPN h2) relay gRPC calls (docs/grpc.md). Default http, or https with tls: true.',
    },
    tls: {
      description:
        'true = https (and wss) to the targets; an object {ca_pem, server_name} means true with those options.',
      oneOf: [
        { type: 'boolean' },
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            ca_pem: {
              type: 'string',
              minLength: 1,
              description: 'PEM CA bundle (text) that replaces the system roots; instead of ca_cert_path.',
            },
            server_name: {
              type: 'string',
              minLength: 1,
              pattern: '^[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$',
              description:
                'Name sent as SNI and the name the certificate must match (default: the Host sent upstream).',
            },
          },
        },
      ],
    },
    ssl_verify: { type: 'boolean', default: true },
    ca_cert_path: { type: 'string', minLength: 1, [READS_FILE]: true },
    client_cert_path: { type: 'string', minLength: 1, [READS_FILE]: true },
    client_key_path: { type: 'string', minLength: 1, [READS_FILE]: true },
    client_key_password: {
      type: 'string',
      minLength: 1,
      description:
        'Passphrase of an encrypted client_key_path (PEM); a ${secret:…} reference keeps it out of the file (docs/secrets.md).',
    },
  },
};

/** Proxies the request to one target of a load-balanced pool; any backend status leaves through `success`. */
export const upstream = definePlugin({
  type: 'upstream',
  category: 'core',
  description:
    'Proxy the request to a load-balanced pool of backends (health checks, retries on connect failure, TLS/mTLS); streams the response when nothing after it reads the body.',
  schema,
  outputs: {
    success: {
      kind: 'success',
      description: 'The backend answered (any status, 5xx included); ctx.response holds its response.',
    },
  },
  relaysResponse: true,
  readsRequestBody: false,
  readsResponseBody: () => false,
  create(config: UpstreamConfig, env: PluginEnv): UpstreamNode {
    const settings = resolveSettings(config, env);
    // Health state outlives this node: a reload keeps it (docs/plugins/upstream.md#health-checks).
    const health = env.scope.shared(HEALTH_SCOPE_KEY, () => new HealthRegistry());
    if (settings.scheme === 'grpc' || settings.scheme === 'grpcs') {
      if (settings.discovery !== null)
        throw new ConfigError(
          'discovery',
          `is not supported with scheme '${settings.scheme}' yet: list targets`,
        );
      if (settings.active?.type === 'http')
        throw new ConfigError('health_check.active.type', `must be grpc with scheme '${settings.scheme}'`);
      return new UpstreamNode(
        new GrpcUpstream({
          targets: settings.targets,
          balancer: settings.kind,
          hashKey: settings.hashKey,
          tls: settings.tls,
          deadlineMs: settings.timeoutMs,
          retries: settings.retries ?? settings.targets.length - 1,
          passive: settings.passive,
          active: settings.active,
          passHost: settings.passHost,
          upstreamHost: settings.upstreamHost ?? '',
          logger: env.logger,
          where: { policy: env.policy, node: env.nodeId },
          health,
        }),
      );
    }
    if (settings.active?.type === 'grpc')
      throw new ConfigError(
        'health_check.active.type',
        `grpc needs scheme grpc or grpcs, not '${settings.scheme}'`,
      );
    // Discovered targets change in the background, never through a reload (docs/service-discovery.md).
    const lease =
      settings.discovery === null
        ? null
        : env.scope
            .shared(DISCOVERY_SCOPE_KEY, () => new DiscoveryRegistry())
            .acquire(settings.discovery, env.logger);
    const pool = new UpstreamPool({
      targets: settings.targets,
      balancer: settings.kind,
      hashKey: settings.hashKey,
      scheme: settings.scheme,
      tls: settings.tls,
      limits: { deadlineMs: settings.timeoutMs, idleMs: settings.idleMs, streaming: env.streaming },
      retries: settings.retries,
      passive: settings.passive,
      active: settings.active,
      passHost: settings.passHost,
      upstreamHost: settings.upstreamHost ?? '',
      logger: env.logger,
      where: { policy: env.policy, node: env.nodeId },
      health,
    });
    if (lease === null) return new UpstreamNode(pool);
    const unsubscribe = lease.source.subscribe((found) => pool.setTargets(toTargetSpecs(found)));
    return new UpstreamNode(pool, {
      label: lease.source.label,
      source: lease.source,
      release: () => {
        unsubscribe();
        lease.release();
      },
    });
  },
});

/** Everything `create` derives from the config, checked. */
interface Settings {
  /** Empty with `discovery`: the source fills the pool. */
  targets: TargetSpec[];
  discovery: DiscoverySpec | null;
  kind: BalancerKind;
  hashKey: HashKey;
  scheme: Scheme;
  tls: TlsMaterial | null;
  timeoutMs: number;
  idleMs: number;
  /** null: one fewer than the targets there are (discovered ones change). */
  retries: number | null;
  passive: PassivePolicy;
  active: ActivePolicy | null;
  passHost: PassHost;
  upstreamHost: string | null;
}

function resolveSettings(config: UpstreamConfig, env: PluginEnv): Settings {
  if (config.targets !== undefined && config.discovery !== undefined)
    throw new ConfigError('discovery', 'set either targets or discovery, not both');
  if (config.targets === undefined && config.discovery === undefined)
    throw new ConfigError('targets', 'one of targets or discovery is required');
  const discovery = config.discovery === undefined ? null : resolveDiscovery(config.discovery);
  const targets = discovery === null ? resolveTargets(config.targets) : [];

  const explicit = config.load_balancing !== undefined ? 'load_balancing' : 'load_balancer';
  if (config.load_balancing !== undefined && config.load_balancer !== undefined) {
    if (config.load_balancing !== config.load_balancer)
      env.warn('load_balancer', 'ignored: load_balancing is set');
  }
  const name = config.load_balancing ?? config.load_balancer ?? 'round_robin';
  const kind = balancerKind(name);
  if (kind === undefined) {
    throw new ConfigError(
      explicit,
      `Unknown load_balancing '${name}' — supported: ${BALANCER_KINDS.join(', ')}`,
    );
  }

  const hashOn = config.hash_on ?? DEFAULTS.hashOn;
  const hashKey = compileHashKey(hashOn);
  if (hashKey === null) {
    throw new ConfigError(
      'hash_on',
      `unsupported variable '${hashOn}' — use one of ${HASH_ON_VARIABLES.join(', ')}`,
    );
  }

  const tlsOn = config.tls === undefined ? undefined : config.tls !== false;
  if (config.scheme !== undefined && tlsOn !== undefined && TLS_SCHEMES.has(config.scheme) !== tlsOn) {
    throw new ConfigError(
      'tls',
      `tls: ${typeof config.tls === 'object' ? '{…}' : String(config.tls)} contradicts scheme '${config.scheme}'`,
    );
  }
  const scheme = config.scheme ?? (tlsOn === true ? 'https' : 'http');
  const tls = resolveTls(config, scheme, env);

  const passHost = config.pass_host ?? 'node';
  if (passHost === 'rewrite' && config.upstream_host === undefined) {
    throw new ConfigError('upstream_host', "is required when pass_host is 'rewrite'");
  }
  if (passHost !== 'rewrite' && config.upstream_host !== undefined) {
    env.warn('upstream_host', `ignored: pass_host is '${passHost}'`);
  }

  const passive = config.health_check?.passive;
  const active = config.health_check?.active;
  return {
    targets,
    discovery,
    kind,
    hashKey,
    scheme,
    tls,
    timeoutMs: config.timeout_ms ?? DEFAULTS.timeoutMs,
    idleMs: config.stream_idle_timeout_ms ?? DEFAULTS.idleMs,
    retries: config.retries ?? null,
    passive: {
      maxFails: passive?.max_fails ?? DEFAULTS.maxFails,
      failTimeoutMs: (passive?.fail_timeout_seconds ?? DEFAULTS.failTimeoutSeconds) * 1000,
    },
    active:
      active === undefined
        ? null
        : {
            type: active.type ?? (scheme === 'grpc' || scheme === 'grpcs' ? 'grpc' : 'http'),
            grpcService: active.grpc_service ?? '',
            path: active.path ?? DEFAULTS.activePath,
            intervalMs: active.interval_ms ?? DEFAULTS.activeIntervalMs,
            timeoutMs: active.timeout_ms ?? DEFAULTS.activeTimeoutMs,
            healthyStatuses: new Set(active.healthy_statuses ?? DEFAULTS.healthyStatuses),
            unhealthyThreshold: active.unhealthy_threshold ?? DEFAULTS.unhealthyThreshold,
            healthyThreshold: active.healthy_threshold ?? DEFAULTS.healthyThreshold,
          },
    passHost,
    upstreamHost: config.upstream_host ?? null,
  };
}

/** Checks every entry (the reference skipped bad ones silently; we reject them) and drops weight-0 targets. */
function resolveTargets(raw: unknown): TargetSpec[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new ConfigError('targets', 'at least one target is required');
  }
  const seen = new Map<string, number>();
  const out: TargetSpec[] = [];
  raw.forEach((entry: unknown, i) => {
    const at = `targets[${i}]`;
    if (typeof entry !== 'object' || entry === null)
      throw new ConfigError(at, 'must be an object {host, port}');
    const { host: rawHost, port, weight = 1 } = entry as Record<string, unknown>;
    if (typeof rawHost !== 'string' || !isHost(rawHost)) {
      throw new ConfigError(`${at}.host`, 'must be a hostname or an IP address');
    }
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ConfigError(`${at}.port`, 'must be an integer between 1 and 65535');
    }
    if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0) {
      throw new ConfigError(`${at}.weight`, 'must be an integer ≥ 0');
    }
    const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
    const address = formatAddress(host, port);
    const previous = seen.get(address);
    if (previous !== undefined) throw new ConfigError(at, `duplicates targets[${previous}] (${address})`);
    seen.set(address, i);
    if (weight > 0) out.push({ host, port, weight });
  });
  if (out.length === 0) throw new ConfigError('targets', 'every target has weight 0');
  return out;
}

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?)*\.?$/;
const IPV6 = /^\[?[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?\]?$/;

function isHost(host: string): boolean {
  return HOSTNAME.test(host) || (host.includes(':') && IPV6.test(host));
}

function resolveTls(config: UpstreamConfig, scheme: Scheme, env: PluginEnv): TlsMaterial | null {
  const verify = config.ssl_verify ?? true;
  if (config.client_cert_path !== undefined && config.client_key_path === undefined) {
    throw new ConfigError('client_key_path', 'is required with client_cert_path');
  }
  if (config.client_key_path !== undefined && config.client_cert_path === undefined) {
    throw new ConfigError('client_cert_path', 'is required with client_key_path');
  }
  if (config.client_key_password !== undefined && config.client_key_path === undefined) {
    throw new ConfigError('client_key_password', 'is only used with client_key_path');
  }
  const options = typeof config.tls === 'object' ? config.tls : {};
  if (options.ca_pem !== undefined && config.ca_cert_path !== undefined) {
    throw new ConfigError('tls.ca_pem', 'set either tls.ca_pem or ca_cert_path, not both');
  }
  if (!verify && options.ca_pem !== undefined) {
    throw new ConfigError('tls.ca_pem', 'is incompatible with ssl_verify: false (nothing would be verified)');
  }
  if (!verify && config.ca_cert_path !== undefined) {
    throw new ConfigError(
      'ca_cert_path',
      'is incompatible with ssl_verify: false (nothing would be verified)',
    );
  }
  if (!TLS_SCHEMES.has(scheme)) {
    for (const key of Object.values(TLS_KEYS)) {
      if (config[key] !== undefined)
        env.warn(key, `ignored: the scheme is '${scheme}' (set tls: true or scheme: https/grpcs)`);
    }
    return null;
  }
  try {
    return loadTlsMaterial({
      verify,
      caPath: config.ca_cert_path,
      caPem: options.ca_pem,
      serverName: options.server_name,
      certPath: config.client_cert_path,
      keyPath: config.client_key_path,
      keyPassword: config.client_key_password,
    });
  } catch (err) {
    if (err instanceof TlsMaterialError)
      throw new ConfigError(
        err.field === 'ca' && options.ca_pem !== undefined ? 'tls.ca_pem' : TLS_KEYS[err.field],
        err.message,
      );
    throw err;
  }
}

/** The discovery source an upstream node follows, and how to stop following it. */
interface NodeDiscovery {
  /** The `source` label of the metrics (`dns:_http._tcp.example.com`). */
  readonly label: string;
  readonly source: { readonly errors: number };
  readonly release: () => void;
}

/** What the discovery metrics read of a node (src/observability/gateway-series.ts). */
export interface UpstreamDiscoveryState {
  source: string;
  targets: number;
  errors: number;
}

/** A created upstream node; the transport work (balancing, retries, health) lives in its UpstreamPool. */
export class UpstreamNode implements NodeInstance<'success'> {
  readonly #pool: UpstreamPool | GrpcUpstream;
  readonly #discovery: NodeDiscovery | null;

  constructor(pool: UpstreamPool | GrpcUpstream, discovery: NodeDiscovery | null = null) {
    this.#pool = pool;
    this.#discovery = discovery;
  }

  run(ctx: Context): Promise<'success'> {
    if (this.#pool instanceof GrpcUpstream) return this.#pool.call(ctx, 'success' as const);
    if (ctx.request.protocol === 'websocket') return this.#pool.relay(ctx, 'success' as const);
    return this.#pool.forward(ctx, 'success' as const);
  }

  /** Live state of each target, for metrics, the Admin API and tests. */
  targetStates(): UpstreamTargetState[] {
    return this.#pool.targetStates();
  }

  /** The discovery source and how many targets it gave this node; null with static targets. */
  discoveryState(): UpstreamDiscoveryState | null {
    const discovery = this.#discovery;
    if (discovery === null) return null;
    return {
      source: discovery.label,
      targets: this.#pool.targetStates().length,
      errors: discovery.source.errors,
    };
  }

  /** Stops active health checks, releases the shared connection pools and the discovery source. */
  close(): void {
    this.#discovery?.release();
    this.#pool.close();
  }
}
