import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { hostname } from 'node:os';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type * as acme from 'acme-client';
import type { TlsConfig } from '../config/system.js';
import type { ManagedCertificates } from '../server/tls-material.js';
import type { Logger } from '../core/logger.js';
import type { StoreLookup } from '../stores/index.js';
import {
  certFacts,
  acmeClient,
  createPlaceholder,
  newPrivateKey,
  verifyIssued,
  type CertFacts,
  type PemPair,
} from './certs.js';
import {
  DEFAULT_ACME_DIR,
  managedCerts,
  parseDuration,
  type AcmeConfig,
  type AcmeSlotRef,
  type ManagedCertSpec,
} from '../config/acme.js';
import { runDnsHook, type DnsRecord } from './dns-hook.js';
import { FilesystemStorage } from './fs-storage.js';
import type { Http01Tokens } from './http01-responder.js';
import type { AcmeStorage } from './storage.js';
import { StoreStorage } from './store-storage.js';

export type CertState = 'placeholder' | 'issued' | 'renewing' | 'failed';

/** One certificate as the Admin API shows it; never a key. */
export interface CertView {
  id: string;
  domains: string[];
  state: CertState;
  placeholder: boolean;
  not_before: string | null;
  not_after: string | null;
  issuer: string | null;
  serial: string | null;
  next_renewal_at: string | null;
  last_attempt_at: string | null;
  last_error: string | null;
}

export type RenewAnswer = 'scheduled' | 'not_due' | 'in_progress' | 'unknown';

export interface AcmeManagerOptions {
  config: AcmeConfig;
  tls: TlsConfig | undefined;
  /** `admin.tls`: its `acme` slots are managed too (docs/acme.md#the-admin-listener). */
  adminTls?: TlsConfig | undefined;
  logger: Logger;
  /** The stores of the running configuration, for `storage.type: store`. */
  stores: () => StoreLookup;
  /** How often due certificates are looked for (default one minute). */
  checkIntervalMs?: number;
}

interface Entry {
  spec: ManagedCertSpec;
  pair: PemPair;
  placeholder: boolean;
  facts: CertFacts | undefined;
  failed: boolean;
  nextRenewalAt: number;
  lastAttemptAt: number | undefined;
  lastError: string | undefined;
  failures: number;
  /** Orders since start, by outcome (metrics). */
  outcomes: { success: number; failure: number };
  running: Promise<void> | undefined;
}

/** One certificate as the metrics scrape reads it. */
export interface AcmeSample {
  id: string;
  state: CertState;
  /** Unix seconds; 0 while a placeholder serves. */
  notAfter: number;
  /** Unix seconds of the last order attempt; 0 before the first. */
  lastAttempt: number;
  success: number;
  failure: number;
}

export const CERT_STATES: readonly CertState[] = ['placeholder', 'issued', 'renewing', 'failed'];

const PLACEHOLDER_VALIDITY_MS = 24 * 3_600_000;
const LEASE_TTL_MS = 5 * 60_000;
/** A peer holds the lease: look at the storage again this much later. */
const PEER_POLL_MS = 5_000;
/** `workers`: relayed HTTP-01 answers travel as challenges named with this prefix. */
const HTTP01_RELAY_PREFIX = 'http-01/';
const BACKOFF_MIN_MS = 60_000;
const BACKOFF_MAX_MS = 3_600_000;

/**
 * Obtains and renews the certificates that `tls` and `admin.tls` ask ACME
 * for (TLS-ALPN-01, HTTP-01 or DNS-01 through a hook), and hands them to the
 * listeners: a self-signed placeholder until the CA has issued, then the real
 * chain, swapped in for new connections without a restart.
 */
export class AcmeManager implements ManagedCertificates, Http01Tokens {
  readonly #config: AcmeConfig;
  readonly #logger: Logger;
  readonly #storage: AcmeStorage;
  readonly #entries = new Map<string, Entry>();
  readonly #slots = new Map<AcmeSlotRef, Entry>();
  readonly #renewBeforeMs: number;
  readonly #owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #listeners = new Set<() => void>();
  /** Pending TLS-ALPN-01 answers by domain (lowercase). */
  readonly #challenges = new Map<string, SecureContext>();
  /** Pending HTTP-01 key authorizations by token. */
  readonly #http01 = new Map<string, string>();
  readonly #checkIntervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #client: acme.Client | undefined;
  #stopped = false;

  constructor(options: AcmeManagerOptions) {
    this.#config = options.config;
    this.#logger = options.logger;
    this.#renewBeforeMs = parseDuration(options.config.renew_before) ?? 30 * 86_400_000;
    this.#checkIntervalMs = options.checkIntervalMs ?? 60_000;
    const storage = options.config.storage ?? { type: 'filesystem' };
    this.#storage =
      storage.type === 'store'
        ? new StoreStorage(storage.store ?? '', storage.encryption_key ?? '', options.stores)
        : new FilesystemStorage(storage.dir ?? DEFAULT_ACME_DIR);
    for (const spec of managedCerts(options.tls, options.adminTls, options.config.challenge)) {
      // Filled by prepare(); nothing is served before it.
      const entry: Entry = {
        spec,
        pair: { cert: '', key: '' },
        placeholder: true,
        facts: undefined,
        failed: false,
        nextRenewalAt: 0,
        lastAttemptAt: undefined,
        lastError: undefined,
        failures: 0,
        outcomes: { success: 0, failure: 0 },
        running: undefined,
      };
      this.#entries.set(spec.id, entry);
      for (const slot of spec.slots) this.#slots.set(slot, entry);
    }
  }

  get storageKind(): string {
    return this.#storage.kind;
  }

  /**
   * Loads every stored certificate that is still valid and mints a
   * placeholder for the rest, so the listener can start at once. A storage
   * that cannot be read is not fatal: the placeholder serves and issuance
   * retries later.
   */
  async prepare(): Promise<void> {
    for (const entry of this.#entries.values()) {
      try {
        const stored = await this.#storage.loadCert(entry.spec.id);
        if (stored !== undefined) {
          const facts = verifyIssued(stored, entry.spec.domains);
          this.#publish(entry, stored, facts, false);
          this.#logger.info(
            { acme: entry.spec.id, domains: entry.spec.domains, not_after: facts.notAfter.toISOString() },
            'ACME certificate loaded from storage',
          );
          continue;
        }
      } catch (err) {
        this.#logger.warn(
          { acme: entry.spec.id, storage: this.#storage.kind, err: (err as Error).message },
          'cannot use the stored ACME certificate; serving a placeholder',
        );
      }
      entry.pair = await createPlaceholder(entry.spec.domains, PLACEHOLDER_VALIDITY_MS);
      entry.placeholder = true;
      this.#logger.warn(
        { acme: entry.spec.id, domains: entry.spec.domains },
        'serving a self-signed placeholder until the ACME certificate is issued',
      );
    }
  }

  /** Starts the renewal timer (unref'd) and looks for due certificates at once. */
  start(): void {
    this.#stopped = false;
    this.#timer = setInterval(() => this.#tick(), this.#checkIntervalMs);
    this.#timer.unref();
    this.#tick();
  }

  /** Stops the timer; an order in flight is given a moment to finish and its result is dropped. */
  async stop(graceMs = 5000): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    const running = [...this.#entries.values()].flatMap((e) => (e.running === undefined ? [] : [e.running]));
    if (running.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(running),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs).unref())),
    ]);
    clearTimeout(timer);
  }

  // --- what the TLS listener reads -------------------------------------------------

  /** The pair currently served for a slot: the issued chain or the placeholder. */
  pair(slot: AcmeSlotRef): PemPair {
    const entry = this.#slots.get(slot);
    if (entry === undefined) throw new Error(`no ACME certificate for slot ${String(slot)}`);
    return entry.pair;
  }

  /** The certificates of the admin listener: its `admin.tls` slots, same swaps and challenges. */
  forAdmin(): ManagedCertificates {
    return {
      pair: (slot) => this.pair(`admin:${slot}`),
      onChange: (listener) => this.onChange(listener),
      challengeContext: (servername) => this.challengeContext(servername),
    };
  }

  /** The key authorization of a pending HTTP-01 challenge (answered before routing). */
  http01KeyAuthorization(token: string): string | undefined {
    return this.#http01.get(token);
  }

  /** Registers a listener for certificate swaps; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * `workers` (docs/workers.md): the primary orders, but a worker answers the
   * validator's connection, so each TLS-ALPN-01 answer is relayed to every
   * worker (PEM; undefined once removed) and the order waits until they have it.
   */
  challengeRelay: ((domain: string, pair: PemPair | undefined) => Promise<void>) | undefined;

  /** `workers`: a worker installs (or drops) the answer the primary created. */
  setChallenge(domain: string, pair: PemPair | undefined): void {
    if (domain.startsWith(HTTP01_RELAY_PREFIX)) {
      // An HTTP-01 answer: the token after the prefix, the key authorization as `cert`.
      const token = domain.slice(HTTP01_RELAY_PREFIX.length);
      if (pair === undefined) this.#http01.delete(token);
      else this.#http01.set(token, pair.cert);
    } else if (pair === undefined) this.#challenges.delete(domain);
    else this.#challenges.set(domain, createSecureContext({ key: pair.key, cert: pair.cert }));
  }

  /** The TLS-ALPN-01 certificate for `servername` while its validation is pending. */
  challengeContext(servername: string): SecureContext | undefined {
    return this.#challenges.get(servername.toLowerCase());
  }

  // --- readiness and the Admin API ----------------------------------------------------

  /** Ids of certificates still served by a placeholder. */
  placeholders(): string[] {
    return [...this.#entries.values()].filter((e) => e.placeholder).map((e) => e.spec.id);
  }

  list(): CertView[] {
    return [...this.#entries.values()].map((e) => ({
      id: e.spec.id,
      domains: e.spec.domains,
      state: stateOf(e),
      placeholder: e.placeholder,
      not_before: e.facts?.notBefore.toISOString() ?? null,
      not_after: e.facts?.notAfter.toISOString() ?? null,
      issuer: e.facts?.issuer ?? null,
      serial: e.facts?.serial ?? null,
      next_renewal_at: new Date(e.nextRenewalAt).toISOString(),
      last_attempt_at: e.lastAttemptAt === undefined ? null : new Date(e.lastAttemptAt).toISOString(),
      last_error: e.lastError ?? null,
    }));
  }

  samples(): AcmeSample[] {
    return [...this.#entries.values()].map((e) => ({
      id: e.spec.id,
      state: stateOf(e),
      notAfter: e.placeholder || e.facts === undefined ? 0 : Math.floor(e.facts.notAfter.getTime() / 1000),
      lastAttempt: e.lastAttemptAt === undefined ? 0 : Math.floor(e.lastAttemptAt / 1000),
      success: e.outcomes.success,
      failure: e.outcomes.failure,
    }));
  }

  /**
   * Asks for a renewal now. A valid certificate outside the renewal window is
   * re-issued only with `force` (CA duplicate-certificate limits).
   */
  renew(id: string, force: boolean): RenewAnswer {
    const entry = this.#entries.get(id);
    if (entry === undefined) return 'unknown';
    if (entry.running !== undefined) return 'in_progress';
    if (!force && !entry.placeholder && !entry.failed && entry.nextRenewalAt > Date.now()) return 'not_due';
    this.#attempt(entry);
    return 'scheduled';
  }

  // --- issuance ------------------------------------------------------------------------

  #tick(): void {
    if (this.#stopped) return;
    const now = Date.now();
    for (const entry of this.#entries.values()) {
      if (entry.running === undefined && entry.nextRenewalAt <= now) this.#attempt(entry);
    }
  }

  #attempt(entry: Entry): void {
    const run = this.#order(entry).finally(() => {
      entry.running = undefined;
    });
    entry.running = run;
  }

  async #order(entry: Entry): Promise<void> {
    const { id, domains } = entry.spec;
    entry.lastAttemptAt = Date.now();
    let leased = false;
    try {
      leased = await this.#storage.acquireLease(id, this.#owner, LEASE_TTL_MS);
      if (!leased) {
        // The peer's result is already stored: serve it (publishing sets the next renewal time).
        if (await this.#adoptStored(entry)) return;
        // Look again soon: the peer's order usually completes within seconds.
        entry.nextRenewalAt = Date.now() + PEER_POLL_MS;
        this.#wake(PEER_POLL_MS);
        this.#logger.info({ acme: id }, 'another instance is renewing this ACME certificate');
        return;
      }
      // A peer may have renewed while we waited for the lease.
      if (await this.#adoptStored(entry, true)) return;
      const renewal = !entry.placeholder;
      this.#logger.info({ acme: id, domains, renewal }, 'ordering an ACME certificate');
      const client = await this.#accountClient();
      const key = await newPrivateKey(this.#config.key_type);
      const [, csr] = await acmeClient().crypto.createCsr(
        { commonName: domains[0] as string, altNames: domains },
        key,
      );
      const cleanups: DnsRecord[] = [];
      let cert: string;
      try {
        cert = await client.auto({
          csr,
          termsOfServiceAgreed: true,
          skipChallengeVerification: true,
          challengePriority: [entry.spec.challenge],
          challengeCreateFn: (authz, challenge, keyAuthorization) =>
            this.#present(authz, challenge, keyAuthorization, cleanups),
          challengeRemoveFn: (authz, challenge) => this.#remove(authz, challenge),
        });
      } finally {
        // DNS-01: records are removed once the whole order is done, not per authorization: a
        // wildcard and its base domain share one record name, and a hook may replace by name.
        await this.#cleanupDns(cleanups);
      }
      const pair = { cert, key };
      const facts = verifyIssued(pair, domains);
      await this.#storage.saveCert(id, { ...pair, issued_at: new Date().toISOString() });
      if (this.#stopped) return;
      this.#publish(entry, pair, facts, true);
      entry.outcomes.success++;
      this.#logger.info(
        {
          acme: id,
          domains,
          renewal,
          issuer: facts.issuer,
          serial: facts.serial,
          not_after: facts.notAfter.toISOString(),
        },
        renewal ? 'ACME certificate renewed' : 'ACME certificate issued',
      );
    } catch (err) {
      entry.failures++;
      entry.outcomes.failure++;
      entry.failed = true;
      entry.lastError = errorText(err);
      const delay = Math.min(BACKOFF_MIN_MS * 2 ** (entry.failures - 1), BACKOFF_MAX_MS);
      entry.nextRenewalAt = Date.now() + delay;
      this.#logger.warn(
        {
          acme: id,
          domains,
          err: entry.lastError,
          retry_in_seconds: delay / 1000,
          placeholder: entry.placeholder,
        },
        'ACME order failed; the current certificate keeps serving',
      );
      if (entry.placeholder) await this.#refreshPlaceholder(entry);
    } finally {
      if (leased) await this.#storage.releaseLease(id, this.#owner).catch(() => undefined);
    }
  }

  /** Sets up the answer to one challenge of an order, relayed to workers where they answer. */
  async #present(
    authz: acme.Authorization,
    challenge: { readonly type: string; readonly token: string },
    keyAuthorization: string,
    cleanups: DnsRecord[],
  ): Promise<void> {
    const domain = authz.identifier.value.toLowerCase();
    if (challenge.type === 'tls-alpn-01') {
      // EC like every managed certificate: OpenSSL keeps one certificate per key type on a
      // connection, so an RSA challenge certificate would lose to the EC one already there.
      const [challengeKey, challengeCert] = await acmeClient().crypto.createAlpnCertificate(
        authz,
        keyAuthorization,
        await newPrivateKey('ecdsa-p256'),
      );
      this.#challenges.set(domain, createSecureContext({ key: challengeKey, cert: challengeCert }));
      await this.challengeRelay?.(domain, { key: challengeKey.toString(), cert: challengeCert.toString() });
    } else if (challenge.type === 'http-01') {
      this.#http01.set(challenge.token, keyAuthorization);
      await this.challengeRelay?.(`${HTTP01_RELAY_PREFIX}${challenge.token}`, {
        cert: keyAuthorization,
        key: '',
      });
    } else if (challenge.type === 'dns-01') {
      const hook = this.#config.dns_hook;
      if (hook === undefined) throw new Error('dns-01 needs acme.dns_hook');
      const record: DnsRecord = {
        action: 'present',
        domain,
        record_name: `_acme-challenge.${domain}`,
        value: keyAuthorization,
      };
      cleanups.push({ ...record, action: 'cleanup' });
      await runDnsHook(hook, record);
      this.#logger.info({ record: record.record_name }, 'ACME DNS-01 record presented');
      if (hook.propagation_seconds > 0)
        await new Promise((resolve) => setTimeout(resolve, hook.propagation_seconds * 1000));
    } else {
      throw new Error(`the CA offered no ${this.#config.challenge} challenge (got ${challenge.type})`);
    }
  }

  async #remove(
    authz: acme.Authorization,
    challenge: { readonly type: string; readonly token: string },
  ): Promise<void> {
    if (challenge.type === 'tls-alpn-01') {
      const domain = authz.identifier.value.toLowerCase();
      this.#challenges.delete(domain);
      await this.challengeRelay?.(domain, undefined);
    } else if (challenge.type === 'http-01') {
      this.#http01.delete(challenge.token);
      await this.challengeRelay?.(`${HTTP01_RELAY_PREFIX}${challenge.token}`, undefined);
    }
  }

  /** Runs the cleanup of every DNS-01 record the order presented; a failure is logged, not fatal. */
  async #cleanupDns(records: readonly DnsRecord[]): Promise<void> {
    const hook = this.#config.dns_hook;
    if (hook === undefined) return;
    for (const record of records) {
      try {
        await runDnsHook(hook, record);
      } catch (err) {
        this.#logger.warn(
          { record: record.record_name, err: (err as Error).message },
          'ACME DNS-01 record cleanup failed; remove it by hand',
        );
      }
    }
  }

  /** Looks for due certificates after `delayMs` (not keeping the process alive). */
  #wake(delayMs: number): void {
    setTimeout(() => this.#tick(), delayMs).unref();
  }

  /** Publishes a stored certificate that is newer than the one held; true when it is not due. */
  async #adoptStored(entry: Entry, onlyIfNotDue = false): Promise<boolean> {
    const stored = await this.#storage.loadCert(entry.spec.id);
    if (stored === undefined) return false;
    let facts: CertFacts;
    try {
      facts = verifyIssued(stored, entry.spec.domains);
    } catch {
      return false;
    }
    const held = entry.placeholder ? 0 : (entry.facts?.notAfter.getTime() ?? 0);
    if (facts.notAfter.getTime() <= held) return false;
    if (onlyIfNotDue && facts.notAfter.getTime() - this.#renewBeforeMs <= Date.now()) return false;
    this.#publish(entry, stored, facts, true);
    this.#logger.info({ acme: entry.spec.id }, 'ACME certificate picked up from storage');
    return true;
  }

  #publish(entry: Entry, pair: PemPair, facts: CertFacts, notify: boolean): void {
    entry.pair = { cert: pair.cert, key: pair.key };
    entry.placeholder = false;
    entry.facts = facts;
    entry.failed = false;
    entry.failures = 0;
    entry.lastError = undefined;
    entry.nextRenewalAt = facts.notAfter.getTime() - this.#renewBeforeMs;
    if (notify) for (const listener of this.#listeners) listener();
  }

  /** Placeholders live a day; a gateway that keeps failing to issue re-mints them before they lapse. */
  async #refreshPlaceholder(entry: Entry): Promise<void> {
    const expires = certFacts(entry.pair.cert).notAfter.getTime();
    if (expires - Date.now() > 3_600_000) return;
    entry.pair = await createPlaceholder(entry.spec.domains, PLACEHOLDER_VALIDITY_MS);
    for (const listener of this.#listeners) listener();
  }

  /** The ACME client with a registered account, created (and stored) on first use. */
  async #accountClient(): Promise<acme.Client> {
    if (this.#client !== undefined) return this.#client;
    const config = this.#config;
    if (config.directory_ca_path !== undefined) {
      // acme-client shares one axios instance; there is one ACME directory per process.
      acmeClient().axios.defaults.httpsAgent = new Agent({
        ca: [...rootCertificates, readFileSync(config.directory_ca_path, 'utf8')],
      });
    }
    let account = await this.#storage.loadAccount();
    if (account?.directory_url !== config.directory_url) account = undefined;
    const key = account?.key ?? (await newPrivateKey('ecdsa-p256'));
    const client = new (acmeClient().Client)({
      directoryUrl: config.directory_url,
      accountKey: key,
      backoffMin: 500,
      backoffMax: 10_000,
      backoffAttempts: 30,
      ...(account?.url === undefined ? {} : { accountUrl: account.url }),
      ...(config.eab === undefined
        ? {}
        : { externalAccountBinding: { kid: config.eab.key_id, hmacKey: config.eab.hmac_key } }),
    });
    if (account?.url === undefined) {
      await client.createAccount({ termsOfServiceAgreed: true, contact: config.contact });
      await this.#storage.saveAccount({
        key,
        directory_url: config.directory_url,
        url: client.getAccountUrl(),
      });
      this.#logger.info({ directory: config.directory_url }, 'ACME account registered');
    }
    this.#client = client;
    return client;
  }
}

function stateOf(entry: Entry): CertState {
  if (entry.running !== undefined) return 'renewing';
  if (entry.failed) return 'failed';
  return entry.placeholder ? 'placeholder' : 'issued';
}

/** The CA's problem detail when there is one, never a stack or a key. */
function errorText(err: unknown): string {
  const e = err as { message?: string; response?: { data?: { detail?: string } } };
  return e.response?.data?.detail ?? e.message ?? String(err);
}
