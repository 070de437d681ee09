/** The node-config keys by which plugins turn off certificate verification of their outbound calls. */
const VERIFY_KEYS = ['ssl_verify', 'tls_verify'] as const;

/**
 * Outbound calls verify TLS by default (they carry credentials: API keys,
 * passwords, tokens, logged request data). A node whose config turns that
 * off gets a WARN at load naming its policy and node (docs/security.md#outbound-tls).
 */
export function warnUnverifiedTls(
  config: Readonly<Record<string, unknown>>,
  warn: (key: string, message: string) => void,
): void {
  for (const key of VERIFY_KEYS) {
    if (config[key] === false)
      warn(
        key,
        "false: the TLS certificates of this node's https endpoints are not verified, so the credentials and data it sends can be intercepted; trust a private CA instead (NODE_EXTRA_CA_CERTS, or ca_cert_path where the node has one)",
      );
  }
}
