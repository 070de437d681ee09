import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { TlsConfig } from '../config/system.js';
import type { Logger } from '../observability/logger.js';
import { watchConfigFile, type ConfigWatcher } from '../config/watch.js';

interface CertFiles {
  cert_path: string;
  key_path: string;
}

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
  /** Called with the new default pair so the server can `setSecureContext`. */
  onDefaultChange: ((options: SecureContextOptions) => void) | undefined;

  constructor(config: TlsConfig, logger: Logger, label: string) {
    this.#config = config;
    this.#logger = logger;
    this.#label = label;
    this.#clientCa = config.client_ca_path === undefined ? undefined : readFileSync(config.client_ca_path);
    if (config.cert_path === undefined || config.key_path === undefined) {
      throw new Error(`${label}: set cert_path + key_path`);
    }
    this.#default = this.#load(config as CertFiles);
    for (const sni of config.sni_certs) {
      if (sni.cert_path === undefined || sni.key_path === undefined) continue;
      this.#store(sni.server_name, this.#load(sni as CertFiles));
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
      {
        files: this.#config as CertFiles,
        name: 'default',
        apply: (loaded) => {
          this.#default = loaded;
          this.onDefaultChange?.(this.#secureOptions(loaded));
        },
      },
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
  }

  close(): void {
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
    };
  }

  get minVersion(): 'TLSv1.2' | 'TLSv1.3' {
    return this.#config.min_version === '1.3' ? 'TLSv1.3' : 'TLSv1.2';
  }

  #load(files: CertFiles): LoadedContext {
    const cert = readFileSync(files.cert_path);
    const key = readFileSync(files.key_path);
    // createSecureContext checks that the key matches the certificate.
    const context = createSecureContext(this.#secureOptions({ cert, key }));
    return { context, cert, key };
  }
}
