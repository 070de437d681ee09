import type { ConfigIssue } from '../config/schema-validate.js';
import type { SystemConfig, TlsConfig } from '../config/system.js';

/** The top-level `acme:` block of system.yaml once validated (docs/acme.md). */
export interface AcmeConfig {
  directory_url: string;
  directory_ca_path?: string;
  contact: string[];
  terms_of_service_agreed?: boolean;
  eab?: { key_id: string; hmac_key: string };
  key_type: 'ecdsa-p256' | 'ecdsa-p384';
  renew_before: string | number;
  storage?: AcmeStorageConfig;
}

export type AcmeStorageConfig =
  { type: 'filesystem'; dir?: string } | { type: 'store'; store?: string; encryption_key?: string };

/** The `acme:` block of a validated system config, typed. */
export function acmeConfigOf(config: SystemConfig): AcmeConfig | undefined {
  return config.acme as AcmeConfig | undefined;
}

/** docs/reference-compatibility.md: the reference's default directory for filesystem storage. */
export const DEFAULT_ACME_DIR = '/var/lib/featherbit/acme';

/** Where a managed certificate is served: the listener's default certificate or one `sni_certs` entry. */
export type AcmeSlotRef = 'default' | number;

/** One certificate the manager keeps: its id, its domains and the TLS slots that serve it. */
export interface ManagedCertSpec {
  id: string;
  domains: string[];
  slots: AcmeSlotRef[];
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4 = /^\d+\.\d+\.\d+\.\d+$/;

/**
 * A certificate's id: its domains lowercased, deduplicated, sorted and joined
 * with commas, so two slots with one domain set share a certificate and a
 * reordered list does not re-issue.
 */
export function certIdOf(domains: readonly string[]): string {
  return [...new Set(domains.map((d) => d.toLowerCase()))].sort().join(',');
}

/** `30d`, `12h`, `90m`, `45s` or bare seconds → milliseconds; undefined when malformed. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value * 1000 : undefined;
  const m = /^(\d+)\s*([dhms]?)$/.exec(value.trim());
  if (m === null) return undefined;
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, '': 1000 }[
    m[2] as 'd' | 'h' | 'm' | 's' | ''
  ];
  return Number(m[1]) * unit;
}

/** The certificates the data-plane `tls` block asks ACME for, grouped by id. */
export function managedCerts(tls: TlsConfig | undefined): ManagedCertSpec[] {
  if (tls === undefined) return [];
  const byId = new Map<string, ManagedCertSpec>();
  const add = (domains: string[], slot: AcmeSlotRef) => {
    const id = certIdOf(domains);
    const spec = byId.get(id) ?? { id, domains: id.split(','), slots: [] };
    spec.slots.push(slot);
    byId.set(id, spec);
  };
  if (tls.acme !== undefined) add(tls.acme.domains ?? [], 'default');
  tls.sni_certs.forEach((s, i) => {
    if (s.acme === undefined) return;
    const domains = s.acme.domains ?? [];
    add(domains.length > 0 ? domains : [s.server_name], i);
  });
  return [...byId.values()];
}

/**
 * What the schema cannot say about `acme:` (docs/configuration.md#systemyaml): https directory,
 * accepted terms, a usable renewal window, storage by type, and domains that
 * TLS-ALPN-01 can validate (no wildcards, no IP addresses).
 */
export function acmeConfigIssues(config: SystemConfig): ConfigIssue[] {
  const acme = config.acme as AcmeConfig | undefined;
  if (acme === undefined) return [];
  const issues: ConfigIssue[] = [];
  const issue = (path: string, message: string) => issues.push({ path, message });
  let url: URL | undefined;
  try {
    url = new URL(acme.directory_url);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== 'https:')
    issue('acme.directory_url', `acme.directory_url must be an https:// URL (got '${acme.directory_url}')`);
  if (acme.terms_of_service_agreed !== true)
    issue('acme.terms_of_service_agreed', 'acme.terms_of_service_agreed must be true');
  if (parseDuration(acme.renew_before) === undefined)
    issue(
      'acme.renew_before',
      `acme.renew_before '${acme.renew_before}' is not a duration (30d, 12h, 90m, 45s)`,
    );
  if (acme.eab !== undefined && (acme.eab.key_id === '' || acme.eab.hmac_key === ''))
    issue(
      'acme.eab',
      'acme.eab.key_id and acme.eab.hmac_key must not be empty (is the environment variable set?)',
    );
  const storage = acme.storage;
  if (storage?.type === 'store') {
    if (storage.store === undefined || storage.store === '')
      issue('acme.storage.store', 'acme.storage.store must name a store of gateway.yaml `stores`');
    if (storage.encryption_key === undefined || storage.encryption_key === '')
      issue('acme.storage.encryption_key', 'acme.storage.encryption_key is required for storage type store');
  } else if (storage !== undefined && 'store' in storage && storage.store !== undefined) {
    issue('acme.storage.store', 'acme.storage.store applies only to storage type store');
  }
  const tls = config.tls;
  const check = (path: string, domains: readonly string[]) =>
    domains.forEach((d, i) => {
      const name = d.toLowerCase();
      if (name.startsWith('*.'))
        issue(
          `${path}[${i}]`,
          `${path}[${i}] '${d}': TLS-ALPN-01 cannot issue wildcard certificates; use a file-based cert`,
        );
      else if (IPV4.test(name) || name.includes(':'))
        issue(`${path}[${i}]`, `${path}[${i}] '${d}': IP addresses are not supported, use a DNS name`);
      else if (!DOMAIN.test(name))
        issue(`${path}[${i}]`, `${path}[${i}] '${d}' is not a DNS name ([a-z0-9.-])`);
    });
  if (tls?.acme !== undefined) check('tls.acme.domains', tls.acme.domains ?? []);
  tls?.sni_certs.forEach((s, i) => {
    if (s.acme === undefined) return;
    const domains = s.acme.domains ?? [];
    check(
      domains.length > 0 ? `tls.sni_certs[${i}].acme.domains` : `tls.sni_certs[${i}].server_name`,
      domains.length > 0 ? domains : [s.server_name],
    );
  });
  return issues;
}

/** Checks `acme.storage.store` against the stores of gateway.yaml; called once both files are loaded. */
export function acmeStoreIssues(config: SystemConfig, storeNames: readonly string[]): ConfigIssue[] {
  const storage = (config.acme as AcmeConfig | undefined)?.storage;
  if (storage?.type !== 'store' || storage.store === undefined) return [];
  return storeNames.includes(storage.store)
    ? []
    : [
        {
          path: 'acme.storage.store',
          message: `acme.storage.store '${storage.store}' is not a store of gateway.yaml (stores: ${storeNames.join(', ') || 'none'})`,
        },
      ];
}
