/**
 * `config.etcd.tls` of system.yaml (docs/etcd.md#tls): its shape and the check of its files. Apart
 * from the etcd client so that reading system.yaml (`switchyard validate`) does not load undici.
 */
import { loadTlsMaterial, TlsMaterialError, type TlsMaterial } from '../tls/client.js';
import { ConfigRejected, type ConfigIssue } from './schema-validate.js';

/** Key path of the settings in system.yaml, for errors. */
export const ETCD_TLS_KEY = 'config.etcd.tls';

/** `config.etcd.tls` of system.yaml. */
export interface EtcdTlsConfig {
  ca_file?: string;
  cert_file?: string;
  key_file?: string;
  server_name?: string;
  verify: boolean;
}

/**
 * Checks the `config.etcd.tls` files when system.yaml is read, so a bad file is
 * reported like any other system.yaml error, with its key and line.
 */
export function etcdTlsIssues(settings: {
  endpoints: string[];
  tls?: EtcdTlsConfig | undefined;
}): ConfigIssue[] {
  if (!settings.endpoints.some((e) => /^https:/i.test(e.trim()))) return [];
  try {
    etcdTlsMaterial(settings.tls);
    return [];
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues;
    throw err;
  }
}

/** Loads `config.etcd.tls`; a bad file is a ConfigRejected naming its key. */
export function etcdTlsMaterial(tls: EtcdTlsConfig | undefined): TlsMaterial {
  const t = tls ?? { verify: true };
  if ((t.cert_file === undefined) !== (t.key_file === undefined)) {
    const missing = t.cert_file === undefined ? 'cert_file' : 'key_file';
    throw new ConfigRejected([
      {
        path: `${ETCD_TLS_KEY}.${missing}`,
        message: `is required with ${ETCD_TLS_KEY}.${missing === 'cert_file' ? 'key_file' : 'cert_file'}`,
      },
    ]);
  }
  try {
    return loadTlsMaterial({
      verify: t.verify,
      caPath: t.ca_file,
      certPath: t.cert_file,
      keyPath: t.key_file,
      serverName: t.server_name,
    });
  } catch (err) {
    if (!(err instanceof TlsMaterialError)) throw err;
    const key = err.field === 'ca' ? 'ca_file' : err.field === 'cert' ? 'cert_file' : 'key_file';
    throw new ConfigRejected([{ path: `${ETCD_TLS_KEY}.${key}`, message: err.message }]);
  }
}
