import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import type { StoreConfig } from '../config/gateway.js';
import { compatNames, SWITCHYARD_NAMES } from '../config/compat-names.js';
import { interpolateEnv } from '../config/interpolate.js';
import type { ConfigIssue } from '../config/schema-validate.js';
import { resolveTopology, type TopologySpec } from './topology.js';

/** Our prefix; `compat.store_key_prefix` (`fb` with `compat.reference_names`) replaces it. */
export const DEFAULT_KEY_PREFIX = SWITCHYARD_NAMES.storeKeyPrefix;
export const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
export const DEFAULT_CONNECT_BUDGET_MS = 5000;

/** Everything needed to open one connection; equal specs share one client. */
export interface ConnectionSpec {
  host: string;
  port: number;
  db: number;
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
  ca: Buffer | undefined;
  connectTimeoutMs: number;
  connectBudgetMs: number;
  /** Sentinel and cluster settings; `topology: 'standalone'` uses host and port above. */
  topology: TopologySpec;
  /** Digest of the fields above: the registry key. Hashed so no secret sits in a map key. */
  fingerprint: string;
}

export interface ResolvedStore {
  name: string;
  keyPrefix: string;
  connection: ConnectionSpec;
}

/**
 * Resolves `${ENV}` placeholders and checks one `stores:` entry. Problems are
 * pushed to `issues` at `path` (e.g. `stores[0].url`); no network I/O happens here.
 */
export function resolveStoreConfig(
  config: StoreConfig,
  path: string,
  env: NodeJS.ProcessEnv,
  configDir: string | undefined,
  issues: ConfigIssue[],
): ResolvedStore | undefined {
  const before = issues.length;
  const where = `store '${config.name}'`;
  const text = (value: string | undefined): string | undefined =>
    value === undefined ? undefined : interpolateEnv(value, env);

  const topology = resolveTopology(config, path, where, env, issues);
  // Sentinel and cluster stores name their nodes in `urls`; their `url` is refused by resolveTopology.
  const url: ParsedUrl | undefined =
    topology === undefined
      ? undefined
      : topology.topology === 'standalone'
        ? parseUrl(text(config.url) ?? '', `${path}.url`, where, issues)
        : {
            host: '',
            port: 0,
            db: 0,
            username: topology.username,
            password: topology.password,
            tls: topology.tls,
          };
  const timeout = positiveInt(config.connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS, env);
  if (timeout === undefined) {
    issues.push({
      path: `${path}.connect_timeout_ms`,
      message: `${where}: connect_timeout_ms must be a positive integer`,
    });
  }
  const budget = positiveInt(config.connect_budget_ms, DEFAULT_CONNECT_BUDGET_MS, env);
  if (budget === undefined) {
    issues.push({
      path: `${path}.connect_budget_ms`,
      message: `${where}: connect_budget_ms must be a positive integer`,
    });
  }

  let ca: Buffer | undefined;
  const caPath = text(config.tls?.ca_cert_path);
  if (caPath !== undefined && caPath !== '') {
    const file = isAbsolute(caPath) || configDir === undefined ? caPath : resolvePath(configDir, caPath);
    try {
      ca = readFileSync(file);
    } catch (err) {
      issues.push({
        path: `${path}.tls.ca_cert_path`,
        message: `${where}: cannot read ca_cert_path '${caPath}': ${(err as Error).message}`,
      });
    }
  }
  if (
    issues.length > before ||
    topology === undefined ||
    url === undefined ||
    timeout === undefined ||
    budget === undefined
  ) {
    return undefined;
  }

  const password = text(config.password);
  const spec = {
    host: url.host,
    port: url.port,
    db: url.db,
    username: url.username,
    password: password !== undefined && password !== '' ? password : url.password,
    tls: url.tls,
    ca,
    connectTimeoutMs: timeout,
    connectBudgetMs: budget,
    topology,
  };
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify({
        ...spec,
        ca: ca === undefined ? null : createHash('sha256').update(ca).digest('hex'),
      }),
    )
    .digest('base64url');
  return {
    name: config.name,
    keyPrefix: text(config.key_prefix) ?? compatNames().storeKeyPrefix,
    connection: { ...spec, fingerprint },
  };
}

interface ParsedUrl {
  host: string;
  port: number;
  db: number;
  username: string | undefined;
  password: string | undefined;
  tls: boolean;
}

function parseUrl(raw: string, path: string, where: string, issues: ConfigIssue[]): ParsedUrl | undefined {
  if (raw.trim() === '') {
    issues.push({ path, message: `${where}: url is required (or topology sentinel/cluster with urls)` });
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({ path, message: `${where}: url is not a valid URL` });
    return undefined;
  }
  const scheme = url.protocol.toLowerCase();
  if (scheme !== 'redis:' && scheme !== 'rediss:') {
    issues.push({ path, message: `${where}: url must start with redis:// or rediss://` });
    return undefined;
  }
  const dbText = url.pathname.replace(/^\//, '');
  const db = dbText === '' ? 0 : Number(dbText);
  if (!Number.isInteger(db) || db < 0) {
    issues.push({ path, message: `${where}: url path must be a database number` });
    return undefined;
  }
  if (url.hostname === '') {
    issues.push({ path, message: `${where}: url has no host` });
    return undefined;
  }
  const decode = (s: string): string | undefined => (s === '' ? undefined : decodeURIComponent(s));
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? 6379 : Number(url.port),
    db,
    username: decode(url.username),
    password: decode(url.password),
    tls: scheme === 'rediss:',
  };
}

function positiveInt(
  value: number | string | undefined,
  fallback: number,
  env: NodeJS.ProcessEnv,
): number | undefined {
  if (value === undefined) return fallback;
  const text = typeof value === 'string' ? interpolateEnv(value, env).trim() : String(value);
  if (text === '') return fallback;
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
