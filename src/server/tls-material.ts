import { readFileSync } from 'node:fs';
import {
  createSecureContext,
  type SecureContext,
  type SecureContextOptions,
  type TlsOptions,
  type TLSSocket,
  type Server as TlsServer,
} from 'node:tls';
import type { TlsConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { watchConfigFile, type ConfigWatcher } from '../config/watch.js';
import { OcspStapler } from './ocsp-stapling.js';

interface CertFiles {
  cert_path: string;
  key_path: string;
}

/**
 * Certificates supplied by something other than files (ACME, src/acme/):
 * the pair of the `tls.acme` slot (`'default'`) or of `sni_certs[i].acme`,
 * a signal when any of them changes, and the TLS-ALPN-01 answers.
 */
export interface ManagedCertificates {
  pair(slot: 'default' | number): { cert: string; key: string };
  onChange(listener: () => void): () => void;
  challengeContext(servername: string): SecureContext | undefined;
}

/** RFC 8737: the ALPN protocol of a TLS-ALPN-01 validation connection. */
export const ACME_TLS_ALPN = 'acme-tls/1';

/** Sockets that offered `acme-tls/1` (TLS 1.3 runs the ALPN callback before the SNI callback). */
const acmeValidations = new WeakSet<TLSSocket>();

interface LoadedContext {
  context: SecureContext;
  cert: Buffer;
  key: Buffer;
}

/**
 * The certificates of one TLS listener: the default pair plus `sni_certs`,
 * re-read when their files change. A new file that does not load keeps the
 * previous certificate and logs a WARN; new connections get whatever is
 * current, established ones keep theirs.
 */
export class TlsMaterial {
  readonly #config: TlsConfig;
  readonly #logger: Logger;
  readonly #label: string;
  #default: LoadedContext;
  /** Exact server names (lowercase) and `*.suffix` wildcards (stored as `.suffix`). */
  #exact = new Map<string, LoadedContext>();
  #wildcard = new Map<string, LoadedContext>();
  #watchers: ConfigWatcher[] = [];
  /** Client CA for mTLS; every context carries it because SNI contexts verify client certificates too. */
  readonly #clientCa: Buffer | undefined;
  /** `tls.crl_path`: CRLs every context checks client certificates against; replaced when the file changes. */
  #crl: Buffer | undefined;
  /** Called with the new default pair so the server can `setSecureContext`. */
  onDefaultChange: ((options: SecureContextOptions) => void) | undefined;
  readonly #managed: ManagedCertificates | undefined;
  #stapler: OcspStapler | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(config: TlsConfig, logger: Logger, label: string, managed?: ManagedCertificates) {
    this.#config = config;
    this.#logger = logger;
    this.#label = label;
    this.#managed = managed;
    this.#clientCa = config.client_ca_path === undefined ? undefined : readFileSync(config.client_ca_path);
    this.#crl = config.crl_path === undefined ? undefined : loadCrl(config.crl_path);
    if (config.acme !== undefined && managed !== undefined) {
      this.#default = this.#loadPem(managed.pair('default'));
    } else if (config.cert_path === undefined || config.key_path === undefined) {
      throw new Error(`${label}: set cert_path + key_path`);
    } else {
      this.#default = this.#load(config as CertFiles);
    }
    config.sni_certs.forEach((sni, i) => {
      if (sni.acme !== undefined && managed !== undefined)
        this.#store(sni.server_name, this.#loadPem(managed.pair(i)));
      if (sni.cert_path === undefined || sni.key_path === undefined) return;
      this.#store(sni.server_name, this.#load(sni as CertFiles));
    });
    this.#unsubscribe = managed?.onChange(() => this.#reloadManaged());
  }

  /**
   * When ACME manages a certificate here: the SNI and ALPN hooks that answer
   * TLS-ALPN-01 validations with the challenge certificate and negotiate
   * `protocols` for every other client. Undefined otherwise (plain ALPNProtocols).
   */
  acmeServerOptions(
    protocols: readonly string[],
  ): Pick<TlsOptions, 'SNICallback' | 'ALPNCallback'> | undefined {
    const managed = this.#managed;
    if (managed === undefined) return undefined;
    const byName = this.sniCallback;
    return {
      // Called as a method of the TLSSocket being handshaken.
      SNICallback(this: TLSSocket, servername, done) {
        if (!acmeValidations.has(this)) return byName(servername, done);
        const challenge = managed.challengeContext(servername);
        // RFC 8737 §3: no pending challenge for the name → refuse the handshake.
        if (challenge === undefined) done(new Error(`no pending tls-alpn-01 challenge for ${servername}`));
        else done(null, challenge);
      },
      ALPNCallback(this: TLSSocket, { servername, protocols: offered }) {
        if (offered.includes(ACME_TLS_ALPN)) {
          acmeValidations.add(this);
          return managed.challengeContext(servername) === undefined ? undefined : ACME_TLS_ALPN;
        }
        return protocols.find((p) => offered.includes(p));
      },
    };
  }

  #reloadManaged(): void {
    const managed = this.#managed;
    if (managed === undefined) return;
    try {
      if (this.#config.acme !== undefined) {
        this.#default = this.#loadPem(managed.pair('default'));
        this.onDefaultChange?.(this.#secureOptions(this.#default));
      }
      this.#config.sni_certs.forEach((sni, i) => {
        if (sni.acme !== undefined) this.#store(sni.server_name, this.#loadPem(managed.pair(i)));
      });
      this.#logger.info({ listener: this.#label }, 'ACME certificates swapped in');
    } catch (err) {
      this.#logger.warn(
        { listener: this.#label, err: (err as Error).message },
        'cannot load an ACME certificate; keeping the previous one',
      );
    }
  }

  /** Options for `tls.createServer`: the default pair, minimum version and client verification. */
  serverOptions(): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
    const mtls = this.#clientCa !== undefined;
    return {
      ...this.#secureOptions(this.#default),
      requestCert: mtls,
      rejectUnauthorized: mtls && this.#config.client_cert_required,
    };
  }

  /** The SNI callback: exact name, then a single-label wildcard, else the default certificate. */
  readonly sniCallback = (
    servername: string,
    done: (err: Error | null, ctx?: SecureContext) => void,
  ): void => {
    done(null, this.contextFor(servername));
  };

  contextFor(servername: string | undefined): SecureContext {
    if (servername === undefined || servername === '') return this.#default.context;
    const name = servername.toLowerCase();
    const exact = this.#exact.get(name);
    if (exact !== undefined) return exact.context;
    const dot = name.indexOf('.');
    const wild = dot === -1 ? undefined : this.#wildcard.get(name.slice(dot));
    return wild?.context ?? this.#default.context;
  }

  /** Starts watching every certificate and key file for changes. */
  watch(debounceMs = 200): void {
    const pairs: { files: CertFiles; apply: (loaded: LoadedContext) => void; name: string }[] = [
      ...(this.#config.cert_path === undefined
        ? []
        : [
            {
              files: this.#config as CertFiles,
              name: 'default',
              apply: (loaded: LoadedContext) => {
                this.#default = loaded;
                this.onDefaultChange?.(this.#secureOptions(loaded));
              },
            },
          ]),
      ...this.#config.sni_certs
        .filter((s): s is typeof s & CertFiles => s.cert_path !== undefined && s.key_path !== undefined)
        .map((s) => ({
          files: s,
          name: s.server_name,
          apply: (loaded: LoadedContext) => this.#store(s.server_name, loaded),
        })),
    ];
    for (const pair of pairs) {
      const reload = () => {
        try {
          pair.apply(this.#load(pair.files));
          this.#logger.info({ listener: this.#label, certificate: pair.name }, 'TLS certificate reloaded');
        } catch (err) {
          this.#logger.warn(
            { listener: this.#label, certificate: pair.name, err: (err as Error).message },
            'TLS certificate reload failed; keeping the previous certificate',
          );
        }
      };
      this.#watchers.push(watchConfigFile(pair.files.cert_path, debounceMs, reload));
      if (pair.files.key_path !== pair.files.cert_path) {
        this.#watchers.push(watchConfigFile(pair.files.key_path, debounceMs, reload));
      }
    }
    const crlPath = this.#config.crl_path;
    if (crlPath !== undefined) {
      this.#watchers.push(watchConfigFile(crlPath, debounceMs, () => this.#reloadCrl(crlPath)));
    }
  }

  /**
   * A changed `tls.crl_path`: every context (default and SNI) is rebuilt with
   * the new CRLs, so the next handshake checks against them. A file that does
   * not load keeps the previous CRLs (docs/tls.md#revocation).
   */
  #reloadCrl(path: string): void {
    try {
      const crl = loadCrl(path);
      const previous = this.#crl;
      this.#crl = crl;
      try {
        const rebuilt = (entries: Map<string, LoadedContext>) =>
          new Map([...entries].map(([name, loaded]) => [name, this.#loadPem(loaded)] as const));
        const exact = rebuilt(this.#exact);
        const wildcard = rebuilt(this.#wildcard);
        const fallback = this.#loadPem(this.#default);
        this.#exact = exact;
        this.#wildcard = wildcard;
        this.#default = fallback;
      } catch (err) {
        this.#crl = previous;
        throw err;
      }
      this.onDefaultChange?.(this.#secureOptions(this.#default));
      this.#logger.info({ listener: this.#label, crl_path: path }, 'TLS CRL reloaded');
    } catch (err) {
      this.#logger.warn(
        { listener: this.#label, key: 'tls.crl_path', crl_path: path, err: (err as Error).message },
        'tls.crl_path reload failed; keeping the previous CRLs',
      );
    }
  }

  /** With `tls.ocsp_stapling.enabled`: staples OCSP responses to `server`'s handshakes (docs/tls.md#ocsp-stapling). */
  staple(server: TlsServer): void {
    const config = this.#config.ocsp_stapling;
    if (config?.enabled !== true || this.#stapler !== undefined) return;
    this.#stapler = new OcspStapler(config, this.#logger, this.#label);
    this.#stapler.attach(server);
  }

  close(): void {
    this.#stapler?.close();
    this.#stapler = undefined;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    for (const w of this.#watchers) w.close();
    this.#watchers = [];
  }

  #store(serverName: string, loaded: LoadedContext): void {
    const name = serverName.toLowerCase();
    if (name.startsWith('*.')) this.#wildcard.set(name.slice(1), loaded);
    else this.#exact.set(name, loaded);
  }

  #secureOptions(loaded: { cert: Buffer; key: Buffer }): SecureContextOptions {
    return {
      cert: loaded.cert,
      key: loaded.key,
      minVersion: this.minVersion,
      ...(this.#clientCa === undefined ? {} : { ca: this.#clientCa }),
      ...(this.#crl === undefined ? {} : { crl: this.#crl }),
    };
  }

  get minVersion(): 'TLSv1.2' | 'TLSv1.3' {
    return this.#config.min_version === '1.3' ? 'TLSv1.3' : 'TLSv1.2';
  }

  #load(files: CertFiles): LoadedContext {
    return this.#loadPem({ cert: readFileSync(files.cert_path), key: readFileSync(files.key_path) });
  }

  #loadPem(pem: { cert: string | Buffer; key: string | Buffer }): LoadedContext {
    const cert = Buffer.from(pem.cert);
    const key = Buffer.from(pem.key);
    // createSecureContext checks that the key matches the certificate.
    const context = createSecureContext(this.#secureOptions({ cert, key }));
    return { context, cert, key };
  }
}

/**
 * Reads a PEM file of one or more CRLs and checks that OpenSSL parses it.
 * Errors carry `path`, so a failed start names the key holding it
 * (describeStartupError in src/config/startup-errors.ts).
 */
function loadCrl(path: string): Buffer {
  const crl = readFileSync(path);
  try {
    if (!crl.includes('-----BEGIN X509 CRL-----')) throw new Error('not a PEM CRL file');
    createSecureContext({ crl });
  } catch (err) {
    throw Object.assign(new Error((err as Error).message), { path });
  }
  return crl;
}
