import type { ConfigIssue } from './schema-validate.js';

/**
 * The parts of system.yaml this section reads: `SystemConfig` and `TlsConfig` (./system.ts) fit
 * them. Named here rather than imported, because system.ts calls `acmeConfigIssues`
 * (docs/architecture.md: no file cycles).
 */
interface TlsConfig {
  sni_certs: readonly { server_name: string; acme?: unknown }[];
  acme?: unknown;
}
interface SystemConfig {
  acme?: unknown;
  tls?: TlsConfig;
  admin?: { tls?: TlsConfig };
}

/** The top-level `acme:` block of system.yaml once validated (docs/acme.md). */
export interface AcmeConfig {
  directory_url: string;
  directory_ca_path?: string;
  contact: string[];
  terms_of_service_agreed?: boolean;
  eab?: { key_id: string; hmac_key: string };
  key_type: AcmeKeyType;
  renew_before: string | number;
  storage?: AcmeStorageConfig;
  /** How a slot without its own `challenge` is validated. */
  challenge: AcmeChallengeType;
  /** Publishes DNS-01 TXT records (docs/acme.md#dns-01-through-a-hook). */
  dns_hook?: DnsHookConfig;
}

export type AcmeKeyType = 'ecdsa-p256' | 'ecdsa-p384' | 'rsa-2048' | 'rsa-4096';
export type AcmeChallengeType = 'tls-alpn-01' | 'http-01' | 'dns-01';
export const CHALLENGE_TYPES: readonly AcmeChallengeType[] = ['tls-alpn-01', 'http-01', 'dns-01'];

/** `acme.dns_hook`: a command run per TXT record, or an HTTPS webhook. */
export interface DnsHookConfig {
  type: 'exec' | 'webhook';
  command?: string[];
  url?: string;
  headers?: Record<string, string>;
  ca_path?: string;
  timeout_seconds: number;
  propagation_seconds: number;
}

/** An `acme:` slot of a `tls` block (data plane or admin). */
export interface AcmeSlotConfig {
  domains?: string[];
  challenge?: AcmeChallengeType;
}

export type AcmeStorageConfig =
  { type: 'filesystem'; dir?: string } | { type: 'store'; store?: string; encryption_key?: string };

/** The `acme:` block of a validated system config, typed. */
export function acmeConfigOf(config: SystemConfig): AcmeConfig | undefined {
  return config.acme as AcmeConfig | undefined;
}

/** docs/reference-compatibility.md: the reference's default directory for filesystem storage. */
export const DEFAULT_ACME_DIR = '/var/lib/featherbit/acme';

/**
 * Where a managed certificate is served: the listener's default certificate or one `sni_certs`
 * entry, of the data plane (`'default'`, `0`) or of the admin listener (`'admin:default'`, `'admin:0'`).
 */
export type AcmeSlotRef = 'default' | number | `admin:${string}`;

/** One certificate the manager keeps: its id, its domains, how it is validated and the TLS slots that serve it. */
export interface ManagedCertSpec {
  id: string;
  domains: string[];
  challenge: AcmeChallengeType;
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

/** One ACME slot of a `tls` block: its key path, domains, challenge and slot reference. */
interface SlotUse {
  path: string;
  domainsPath: string;
  domains: string[];
  challenge: AcmeChallengeType;
  challengePath: string;
  slot: AcmeSlotRef;
}

function slotsOf(
  tls: TlsConfig | undefined,
  label: 'tls' | 'admin.tls',
  fallback: AcmeChallengeType,
): SlotUse[] {
  if (tls === undefined) return [];
  const prefix = label === 'tls' ? '' : 'admin:';
  const uses: SlotUse[] = [];
  const acme = tls.acme as AcmeSlotConfig | undefined;
  if (acme !== undefined)
    uses.push({
      path: `${label}.acme`,
      domainsPath: `${label}.acme.domains`,
      domains: acme.domains ?? [],
      challenge: acme.challenge ?? fallback,
      challengePath: acme.challenge === undefined ? 'acme.challenge' : `${label}.acme.challenge`,
      slot: prefix === '' ? 'default' : 'admin:default',
    });
  tls.sni_certs.forEach((s, i) => {
    const slot = s.acme as AcmeSlotConfig | undefined;
    if (slot === undefined) return;
    const listed = slot.domains ?? [];
    uses.push({
      path: `${label}.sni_certs[${i}].acme`,
      domainsPath:
        listed.length > 0 ? `${label}.sni_certs[${i}].acme.domains` : `${label}.sni_certs[${i}].server_name`,
      domains: listed.length > 0 ? listed : [s.server_name],
      challenge: slot.challenge ?? fallback,
      challengePath:
        slot.challenge === undefined ? 'acme.challenge' : `${label}.sni_certs[${i}].acme.challenge`,
      slot: prefix === '' ? i : `admin:${i}`,
    });
  });
  return uses;
}

/**
 * The certificates the data-plane `tls` block and `admin.tls` ask ACME for,
 * grouped by id (one certificate may serve both listeners).
 */
export function managedCerts(
  tls: TlsConfig | undefined,
  adminTls?: TlsConfig,
  fallback: AcmeChallengeType = 'tls-alpn-01',
): ManagedCertSpec[] {
  const byId = new Map<string, ManagedCertSpec>();
  for (const use of [...slotsOf(tls, 'tls', fallback), ...slotsOf(adminTls, 'admin.tls', fallback)]) {
    const id = certIdOf(use.domains);
    const spec = byId.get(id) ?? { id, domains: id.split(','), challenge: use.challenge, slots: [] };
    spec.slots.push(use.slot);
    byId.set(id, spec);
  }
  return [...byId.values()];
}

/**
 * What the schema cannot say about `acme:` (docs/configuration.md#systemyaml): https directory,
 * accepted terms, a usable renewal window, storage by type, domains their
 * challenge can validate (wildcards only with dns-01, no IP addresses), and a
 * `dns_hook` that fits its type.
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
  const fallback = acme.challenge ?? 'tls-alpn-01';
  const uses = [
    ...slotsOf(config.tls, 'tls', fallback),
    ...slotsOf(config.admin?.tls, 'admin.tls', fallback),
  ];
  const byId = new Map<string, SlotUse>();
  for (const use of uses) {
    use.domains.forEach((d, i) => {
      const name = d.toLowerCase();
      const at = use.domainsPath.endsWith('server_name') ? use.domainsPath : `${use.domainsPath}[${i}]`;
      if (name.startsWith('*.') && use.challenge !== 'dns-01')
        issue(
          at,
          `${at} '${d}': a wildcard certificate needs challenge dns-01 (${use.challengePath} is ${use.challenge})`,
        );
      else if (IPV4.test(name) || name.includes(':'))
        issue(at, `${at} '${d}': IP addresses are not supported, use a DNS name`);
      else if (!DOMAIN.test(name.startsWith('*.') ? name.slice(2) : name))
        issue(at, `${at} '${d}' is not a DNS name ([a-z0-9.-])`);
    });
    if (use.challenge === 'dns-01' && acme.dns_hook === undefined)
      issue(
        use.challengePath,
        `${use.challengePath} is dns-01 but acme.dns_hook is not set (an exec command or a webhook publishes the TXT record)`,
      );
    const id = certIdOf(use.domains);
    const first = byId.get(id);
    if (first === undefined) byId.set(id, use);
    else if (first.challenge !== use.challenge)
      issue(
        `${use.path}.challenge`,
        `${use.path} and ${first.path} name the same domains with different challenges (${use.challenge}, ${first.challenge})`,
      );
  }
  const hook = acme.dns_hook;
  if (hook?.type === 'exec' && (hook.command === undefined || hook.command.length === 0))
    issue(
      'acme.dns_hook.command',
      'acme.dns_hook.command must list the program and its arguments for type exec',
    );
  if (hook?.type === 'exec' && hook.url !== undefined)
    issue('acme.dns_hook.url', 'acme.dns_hook.url applies only to type webhook');
  if (hook?.type === 'webhook') {
    if (hook.url === undefined || !hook.url.startsWith('https://'))
      issue(
        'acme.dns_hook.url',
        `acme.dns_hook.url must be an https:// URL for type webhook (got '${hook.url ?? ''}')`,
      );
    if (hook.command !== undefined)
      issue('acme.dns_hook.command', 'acme.dns_hook.command applies only to type exec');
  }
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
