import { readFileSync } from 'node:fs';
import { parseYamlData as parseYaml } from './yaml-data.js';
import { interpolateEnv } from './interpolate.js';
import type { SecretsConfig } from './secrets/schema.js';
import { systemSchema } from './system-schema.js';
import { etcdTlsIssues, type EtcdTlsConfig } from './etcd-tls.js';
import {
  ConfigRejected,
  didYouMean,
  validateAgainst,
  yamlSyntaxIssue,
  type ConfigIssue,
} from './schema-validate.js';
import { acmeConfigIssues } from './acme.js';
import { debugGateIssues } from './debug-gate.js';
import { emptyCredentialIssues } from './system-credentials.js';
import type { AccessLogConfig } from './access-log.js';
import { metricsAuthIssues } from './metrics-auth.js';
import { resolveCompatNames, type CompatConfig } from './compat-names.js';
import { telemetryIssues, type TelemetryConfig } from './telemetry.js';

export interface TlsConfig {
  cert_path?: string;
  key_path?: string;
  min_version: '1.2' | '1.3';
  client_ca_path?: string;
  client_cert_required: boolean;
  /** PEM file of CRLs for client certificates (docs/tls.md#revocation). */
  crl_path?: string;
  /** docs/tls.md#ocsp-stapling */
  ocsp_stapling?: { enabled: boolean; responder_url?: string; refresh_seconds: number };
  sni_certs: { server_name: string; cert_path?: string; key_path?: string; acme?: { domains?: string[] } }[];
  acme?: { domains?: string[] };
}

/** Failed-login throttling of the admin listener (M1); see docs/admin-api.md. */
export interface LoginThrottleConfig {
  enabled: boolean;
  max_failures: number;
  window_seconds: number;
  lock_seconds: number;
  max_lock_seconds: number;
  max_tracked: number;
}

/** Size limits of Admin API writes (L1, L8). */
export interface AdminLimitsConfig {
  max_body_bytes: number;
  max_json_depth: number;
  max_config_bytes: number;
}

export interface AdminConfig {
  bind: string;
  port: number;
  username: string;
  password: string;
  users?: { username: string; password: string; role: 'admin' | 'viewer' }[];
  /** A credential good for GET /metrics only (docs/metrics.md#credentials). */
  metrics_auth?: { username?: string; password?: string; bearer_token?: string };
  ui_enabled: boolean;
  /** Basic challenge realm; filled from `compat` when absent. */
  realm: string;
  /** Open connections to the admin listener (its own cap, so /healthz answers while the data plane is full). */
  max_connections: number;
  /** Origins besides the listener's own that may send Admin writes (CSRF rule). */
  allowed_origins: string[];
  login_throttle: LoginThrottleConfig;
  limits: AdminLimitsConfig;
  /** Applied configurations kept (docs/config-as-code.md#history). */
  history?: { max_versions: number };
  tls?: TlsConfig;
  mcp?: {
    enabled: boolean;
    path: string;
    tokens: { token?: string; scope?: 'read' | 'write'; name?: string }[];
    allowed_origins: string[];
  };
}

export interface DebugConfig {
  enabled: boolean;
  sandbox: boolean;
  trigger_header: string;
  /** Filled from `compat` when absent (src/config/compat-names.ts). */
  trace_id_header: string;
  trace_all: boolean;
  capture_bodies: boolean;
  max_body_bytes: number;
  max_traces: number;
  max_steps: number;
  sandbox_timeout_seconds: number;
  redact_headers: string[];
  redact_query_params: string[];
  redact_message_keys: string[];
  /** Clients whose trigger header counts (L9); default loopback. */
  allowed_cidrs: string[];
  /** When set, the trigger header must carry this value. */
  header_secret?: string;
}

export interface SystemConfig {
  listener: {
    bind: string;
    port: number;
    max_request_body_bytes: number;
    /** Passes through this gateway (its own Via entry) before 508 Loop Detected; default 10. */
    max_hops: number;
    /** Connections plus HTTP/2 streams in flight; 'auto' = max(16, (RLIMIT_NOFILE - 64) / 2) ≤ 10000 (src/server/connection-limit.ts). */
    max_connections: number | 'auto';
    /** HTTP/1.1 server: 'lean' (src/server/lean/) or 'node' (node:http); docs/benchmarks.md. */
    http1_server: 'lean' | 'node';
    /** Client header names with `_`: dropped by default; src/server/request-checks.ts. */
    headers_with_underscores: 'drop' | 'reject' | 'allow';
    /** TRACE is answered 405 unless true. */
    allow_trace: boolean;
  };
  tls?: TlsConfig;
  http2: Http2Config;
  timeouts: {
    connection_seconds: number;
    read_seconds: number;
    write_seconds: number;
    idle_seconds: number;
    shutdown_timeout_seconds: number;
  };
  logging: { level: string; format: string };
  /** docs/logging.md#access-log */
  access_log: AccessLogConfig;
  admin?: AdminConfig;
  config: {
    source: 'file' | 'etcd' | 'kvcluster' | 'kubernetes';
    persist: boolean;
    watch: boolean;
    /** docs/kubernetes.md */
    kubernetes: {
      controller_name: string;
      kubeconfig?: string;
      port_offset: number;
      status_address?: string;
      watch_namespaces?: string[];
      leader_election: {
        enabled: boolean;
        lease_name: string;
        lease_namespace?: string;
        lease_duration_seconds: number;
      };
    };
    etcd?: {
      endpoints: string[];
      prefix: string;
      user?: string;
      password?: string;
      timeout_ms: number;
      /** docs/etcd.md#tls */
      tls: EtcdTlsConfig;
    };
  };
  stream: StreamListenerConfig[];
  debug: DebugConfig;
  /** Validated by src/config/acme.ts; read it through `acmeConfigOf`. */
  acme?: Record<string, unknown>;
  /** Outbound connection pools shared by every upstream node. */
  upstream: { max_connections_per_target: number; http1_client: 'lean' | 'undici' };
  cache: { max_entries: number };
  workers: number | 'auto';
  compat: CompatConfig;
  /** Secret managers of `${secret:…}` references (docs/secrets.md); src/config/secrets/. */
  secrets?: SecretsConfig;
  /** OTLP export (docs/opentelemetry.md); src/telemetry/. */
  telemetry?: TelemetryConfig;
}

/** `http2.*`: the protocol switch and the limits applied to every HTTP/2 client connection. */
export interface Http2Config {
  enabled: boolean;
  max_concurrent_streams: number;
  /** More streams reset by the client before their response, within the window, is rapid reset. */
  max_reset_streams: number;
  reset_window_seconds: number;
}

/** A backend pool of a stream listener (docs/stream.md). */
export interface StreamUpstreamConfig {
  /** Empty with `discovery`. */
  targets: { host: string; port: number; weight: number }[];
  /** One of `targets` or `discovery` (docs/stream.md#service-discovery). */
  discovery?: Record<string, unknown>;
  load_balancing: 'round_robin' | 'least_connections' | 'ip_hash';
}

/** One L4 listener: raw TCP or UDP relayed to a pool, optionally by TLS SNI (TCP). */
export interface StreamListenerConfig {
  protocol: 'tcp' | 'udp';
  bind: string;
  port: number;
  upstream: StreamUpstreamConfig;
  sni_routes: { server_name: string; upstream: StreamUpstreamConfig }[];
  /** TCP only: TLS terminated on the listener, plain bytes to the upstream. */
  tls?: TlsConfig;
}

/** Parses system.yaml text: env interpolation over the text, YAML, schema with defaults, cross-field rules. */
export function parseSystemConfig(text: string, env: NodeJS.ProcessEnv = process.env): SystemConfig {
  let raw: unknown;
  try {
    // `${secret:…}` are resolved on the parsed leaves (cli.ts), never spliced into YAML text.
    raw = parseYaml(interpolateEnv(text, env, false, false)) ?? {};
  } catch (err) {
    throw new ConfigRejected([yamlSyntaxIssue(err)]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigRejected([{ path: '', message: 'system config must be a mapping' }]);
  }
  // An unset `${X}` leaves a null: treat it as "not given" so the default applies.
  const doc = dropNulls(raw) as Record<string, unknown>;
  // Credentials fed by an unset variable are named first; the schema's "is required" for the same key adds nothing.
  const credentials = emptyCredentialIssues(text, env);
  const named = new Set(credentials.map((i) => i.path));
  const schemaIssues = validateAgainst(systemSchema, doc, '', { suggestKeys: true }).filter(
    (i) => !named.has(i.path),
  );
  const issues = [
    ...credentials,
    ...schemaIssues,
    ...crossFieldsBeside(schemaIssues, doc as unknown as SystemConfig).filter((i) => !named.has(i.path)),
  ];
  if (issues.length > 0) throw new ConfigRejected(issues);
  const config = doc as unknown as SystemConfig;
  applyCompatNames(config);
  return config;
}

export function loadSystemConfig(path: string, env: NodeJS.ProcessEnv = process.env): SystemConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigRejected([{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }]);
  }
  return parseSystemConfig(text, env);
}

/** The names left unset take compat's (ours, or the reference's with `compat.reference_names`). */
function applyCompatNames(config: SystemConfig): void {
  const names = resolveCompatNames(config.compat);
  config.debug.trigger_header = (config.debug.trigger_header ?? names.debugHeader).toLowerCase();
  config.debug.trace_id_header = (config.debug.trace_id_header ?? names.traceIdHeader).toLowerCase();
  if (config.admin !== undefined) config.admin.realm ??= names.adminRealm;
  if (config.config.etcd !== undefined) config.config.etcd.prefix ??= names.etcdPrefix;
}

function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = dropNulls(v);
    return out;
  }
  return value;
}

function tlsIssues(label: string, tls: TlsConfig, acmeAllowed: boolean, hasAcme: boolean): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const slot = (
    l: string,
    s: { cert_path?: string; key_path?: string; acme?: unknown },
    acmeRequired: boolean,
  ) => {
    const hasCert = s.cert_path !== undefined || s.key_path !== undefined;
    const both = s.cert_path !== undefined && s.key_path !== undefined;
    if (s.acme !== undefined && !acmeAllowed)
      issues.push({ path: l, message: `${l}: acme is not supported here` });
    else if (s.acme !== undefined && hasCert)
      issues.push({ path: l, message: `${l}: set exactly one of cert_path/key_path or acme` });
    else if (s.acme !== undefined && !hasAcme)
      issues.push({
        path: l,
        message: `${l}: acme slot requires the top-level \`acme:\` block in system.yaml`,
      });
    else if (hasCert && !both)
      issues.push({ path: l, message: `${l}: cert_path and key_path must be set together` });
    else if (!hasCert && s.acme === undefined && acmeRequired)
      issues.push({ path: l, message: `${l}: set cert_path + key_path${acmeAllowed ? ', or acme' : ''}` });
  };
  slot(label, tls, true);
  if (tls.acme !== undefined && (tls.acme.domains ?? []).length === 0 && acmeAllowed) {
    const at = `${label}.acme.domains`;
    issues.push({ path: at, message: `${at} must list at least one domain` });
  }
  tls.sni_certs.forEach((s, i) => slot(`${label}.sni_certs[${i}] (${s.server_name})`, s, true));
  return issues;
}

/** Two listeners on one protocol/address/port, or a pool whose weights are all 0, cannot work. */
function streamIssues(listeners: readonly StreamListenerConfig[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  const pool = (path: string, upstream: StreamUpstreamConfig) => {
    if ((upstream.targets === undefined) === (upstream.discovery === undefined)) {
      issues.push({ path: `${path}.targets`, message: 'set one of targets or discovery' });
      upstream.targets ??= [];
      return;
    }
    if (upstream.discovery !== undefined) {
      upstream.targets = [];
      return;
    }
    if (upstream.targets.every((t) => t.weight === 0))
      issues.push({ path: `${path}.targets`, message: 'every target has weight 0: nothing to connect to' });
  };
  listeners.forEach((l, i) => {
    const at = `stream[${i}]`;
    const key = `${l.protocol} ${l.bind}:${l.port}`;
    const first = seen.get(key);
    if (first !== undefined && l.port !== 0)
      issues.push({ path: `${at}.port`, message: `stream[${first}] already listens on ${key}` });
    else seen.set(key, i);
    pool(`${at}.upstream`, l.upstream);
    if (l.tls !== undefined && l.protocol === 'udp')
      issues.push({ path: `${at}.tls`, message: 'TLS termination is TCP only (no DTLS)' });
    // ACME certificates serve the HTTP listeners only.
    if (l.tls !== undefined) issues.push(...tlsIssues(`${at}.tls`, l.tls, false, false));
    const names = new Set<string>();
    l.sni_routes.forEach((r, j) => {
      const name = r.server_name.toLowerCase();
      if (names.has(name))
        issues.push({ path: `${at}.sni_routes[${j}].server_name`, message: `'${name}' is routed twice` });
      names.add(name);
      pool(`${at}.sni_routes[${j}].upstream`, r.upstream);
    });
  });
  return issues;
}

/** Levels pino runs at; `RUST_LOG`-style filters (`gateway=debug,info`) name them after `=`. */
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
/** `json`, or a text format: `text`, and the reference's tracing formats, all printed as text. */
const LOG_FORMATS = ['json', 'text', 'pretty', 'plain', 'compact', 'full'];

/** A typo in `logging.level`/`format` would otherwise run silently at info / as text (docs/configuration.md). */
function loggingIssues(logging: { level: string; format: string }): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const levels = logging.level.split(',').map((part) => part.trim().toLowerCase());
  const bad = levels.find((part) => !LOG_LEVELS.includes(part.slice(part.indexOf('=') + 1)));
  if (bad !== undefined)
    issues.push({
      path: 'logging.level',
      message: `'${logging.level}' is not a log level; use one of ${LOG_LEVELS.join(', ')}${didYouMean(bad.slice(bad.indexOf('=') + 1), LOG_LEVELS)}`,
    });
  if (!LOG_FORMATS.includes(logging.format.toLowerCase()))
    issues.push({
      path: 'logging.format',
      message: `'${logging.format}' is not a log format; use json or text${didYouMean(logging.format.toLowerCase(), LOG_FORMATS)}`,
    });
  return issues;
}

/**
 * The cross-field rules, also beside schema errors (F19: one pass reports `admin.pasword` and
 * `logging.level: verbose` together): a rule's issue counts only when no schema error sits in the
 * same top-level section, and rules that trip over a section the schema rejected are skipped.
 */
function crossFieldsBeside(schemaIssues: readonly ConfigIssue[], config: SystemConfig): ConfigIssue[] {
  if (schemaIssues.length === 0) return crossFieldIssues(config);
  const section = (path: string) => /^[^.[]*/.exec(path)?.[0] ?? '';
  const rejected = new Set(schemaIssues.map((i) => section(i.path)));
  if (rejected.has('')) return [];
  let found: ConfigIssue[];
  try {
    found = crossFieldIssues(config);
  } catch {
    return [];
  }
  return found.filter((i) => !rejected.has(section(i.path)));
}

function crossFieldIssues(config: SystemConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const hasAcme = config.acme !== undefined;
  if (config.tls) issues.push(...tlsIssues('tls', config.tls, true, hasAcme));
  if (config.admin?.tls) issues.push(...tlsIssues('admin.tls', config.admin.tls, true, hasAcme));
  issues.push(...acmeConfigIssues(config));
  const src = config.config;
  if ((src.source === 'etcd' || src.source === 'kvcluster') && src.etcd === undefined) {
    issues.push({
      path: 'config.etcd.endpoints',
      message: `is required when config.source is ${src.source}`,
    });
  }
  if (src.etcd !== undefined) issues.push(...etcdTlsIssues(src.etcd));
  issues.push(...streamIssues(config.stream));
  issues.push(...debugGateIssues(config.debug));
  issues.push(...metricsAuthIssues(config.admin?.metrics_auth));
  issues.push(...loggingIssues(config.logging));
  issues.push(...telemetryIssues(config.telemetry));
  config.admin?.users?.forEach((u, i) => {
    if (u.password === '')
      issues.push({
        path: `admin.users[${i}].password`,
        message: 'must not be empty (only admin.password may be empty, to generate one)',
      });
  });
  const mcp = config.admin?.mcp;
  if (mcp?.enabled) {
    if (mcp.tokens.length === 0) {
      issues.push({
        path: 'admin.mcp.tokens',
        message: 'admin.mcp.tokens must declare at least one token when admin.mcp.enabled is true',
      });
    }
    const seen = new Map<string, number>();
    mcp.tokens.forEach((t, i) => {
      const token = t.token ?? '';
      if (token === '') {
        issues.push({
          path: `admin.mcp.tokens[${i}].token`,
          message: `admin.mcp.tokens[${i}].token is empty (is the environment variable set?)`,
        });
      } else if (token.length < 16) {
        issues.push({
          path: `admin.mcp.tokens[${i}].token`,
          message: `admin.mcp.tokens[${i}].token must be at least 16 characters`,
        });
      } else if (seen.has(token)) {
        issues.push({
          path: `admin.mcp.tokens[${i}]`,
          message: `admin.mcp.tokens[${i}] duplicates tokens[${seen.get(token)}]`,
        });
      } else seen.set(token, i);
    });
    const p = mcp.path;
    const reserved = ['/', '/api', '/healthz', '/readyz', '/metrics'];
    if (!p.startsWith('/') || reserved.includes(p) || p.startsWith('/api/')) {
      issues.push({
        path: 'admin.mcp.path',
        message: `admin.mcp.path '${p}' must be an absolute path outside /api (and not /, /healthz, /readyz or /metrics)`,
      });
    }
  }
  return issues;
}
