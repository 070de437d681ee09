import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';

/** The verified mTLS identity of a connection, exposed to policies (docs/tls.md). */
export interface ClientCertIdentity {
  /** SHA-256 of the leaf certificate's DER, lowercase hex. */
  fingerprint: string;
  subjectCn: string | undefined;
  sanDns: string[];
}

const cache = new WeakMap<object, ClientCertIdentity | null>();

/** Reads (once per connection) the client certificate of an authorized TLS socket; null without one. */
export function clientCertIdentity(socket: object): ClientCertIdentity | null {
  const cached = cache.get(socket);
  if (cached !== undefined) return cached;
  const tls = socket as Partial<TLSSocket>;
  let identity: ClientCertIdentity | null = null;
  if (tls.encrypted === true && tls.authorized === true && typeof tls.getPeerCertificate === 'function') {
    const cert = tls.getPeerCertificate();
    if (cert !== null && typeof cert === 'object' && cert.raw !== undefined) {
      const cn = cert.subject?.CN;
      identity = {
        fingerprint: createHash('sha256').update(cert.raw).digest('hex'),
        subjectCn: Array.isArray(cn) ? cn[0] : cn,
        sanDns: (cert.subjectaltname ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.startsWith('DNS:'))
          .map((s) => s.slice(4)),
      };
    }
  }
  cache.set(socket, identity);
  return identity;
}
