/**
 * The `tls` key shared by every plugin that calls out over HTTPS (auth
 * providers, loggers): a private CA, a client certificate for mutual TLS and
 * a server-name override, next to the plugin's `ssl_verify`
 * (docs/outbound-tls.md). Loaded once at compile time; a replaced client pair
 * is picked up by new connections (src/tls/client.ts).
 */
import { loadTlsMaterial, TlsMaterialError, type TlsField, type TlsMaterial } from '../tls/client.js';
import { ConfigError, READS_FILE } from '../core/plugin.js';

export interface CalloutTlsConfig {
  ca_file?: string;
  cert_file?: string;
  key_file?: string;
  server_name?: string;
}

export const calloutTlsSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'TLS of the callout: private CA, client certificate for mutual TLS, server name.',
  properties: {
    ca_file: {
      type: 'string',
      minLength: 1,
      [READS_FILE]: true,
      description: 'PEM CA bundle that replaces the system roots.',
    },
    cert_file: {
      type: 'string',
      minLength: 1,
      [READS_FILE]: true,
      description: 'PEM client certificate (mutual TLS).',
    },
    key_file: { type: 'string', minLength: 1, [READS_FILE]: true, description: 'PEM key of cert_file.' },
    server_name: {
      type: 'string',
      minLength: 1,
      description: "SNI and the name checked in the callee's certificate; default the URL's host.",
    },
  },
} as const;

const FIELD_KEYS: Record<TlsField, keyof CalloutTlsConfig> = {
  ca: 'ca_file',
  cert: 'cert_file',
  key: 'key_file',
};

/**
 * Loads the TLS material of a callout: `verify` from the plugin's own key
 * (`ssl_verify`, on by default), files from `tls` (key path `prefix`). Errors
 * are ConfigErrors naming the key, e.g. `tls.cert_file`.
 */
export function calloutTls(
  verify: boolean,
  tls: CalloutTlsConfig | undefined,
  prefix = 'tls',
  verifyKey = 'ssl_verify',
): TlsMaterial {
  const t = tls ?? {};
  if ((t.cert_file === undefined) !== (t.key_file === undefined)) {
    const missing = t.cert_file === undefined ? 'cert_file' : 'key_file';
    const other = missing === 'cert_file' ? 'key_file' : 'cert_file';
    throw new ConfigError(`${prefix}.${missing}`, `is required with ${prefix}.${other}`);
  }
  try {
    return loadTlsMaterial({
      verify,
      caPath: t.ca_file,
      certPath: t.cert_file,
      keyPath: t.key_file,
      serverName: t.server_name,
    });
  } catch (err) {
    if (!(err instanceof TlsMaterialError)) throw err;
    const noFiles = t.ca_file === undefined && t.cert_file === undefined;
    throw new ConfigError(noFiles ? verifyKey : `${prefix}.${FIELD_KEYS[err.field]}`, err.message);
  }
}
