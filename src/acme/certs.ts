import { X509Certificate, createPrivateKey, createPublicKey, randomBytes, webcrypto } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as X509 from '@peculiar/x509';
import type * as AcmeClient from 'acme-client';

// Required on first use, not imported: a gateway without `acme:` never loads them (~25 MiB, docs/deployment.md).
const requireHere = createRequire(import.meta.url);
export const acmeClient = (): typeof AcmeClient => requireHere('acme-client') as typeof AcmeClient;
// @peculiar/x509 2.x resolves its ASN.1 providers through tsyringe, which needs the Reflect
// metadata polyfill loaded first; both stay out of memory until a certificate is made.
const x509Lib = (): typeof X509 => {
  requireHere('reflect-metadata');
  return requireHere('@peculiar/x509') as typeof X509;
};
import type { AcmeConfig } from '../config/acme.js';

/** A certificate chain and its private key, both PEM. */
export interface PemPair {
  cert: string;
  key: string;
}

/** What the Admin API and the renewal timer need to know about a certificate. */
export interface CertFacts {
  notBefore: Date;
  notAfter: Date;
  issuer: string;
  serial: string;
}

/** A fresh private key (PEM) of the configured type: ECDSA P-256/P-384 or RSA 2048/4096 bits. */
export async function newPrivateKey(keyType: AcmeConfig['key_type']): Promise<string> {
  const crypto = acmeClient().crypto;
  const key =
    keyType === 'rsa-2048' || keyType === 'rsa-4096'
      ? await crypto.createPrivateRsaKey(keyType === 'rsa-4096' ? 4096 : 2048)
      : await crypto.createPrivateEcdsaKey(keyType === 'ecdsa-p384' ? 'P-384' : 'P-256');
  return key.toString();
}

/**
 * A self-signed certificate for `domains`, served until the CA issues the
 * real one; nothing trusts it, which is the point of `/readyz` saying so.
 */
export async function createPlaceholder(domains: readonly string[], validityMs: number): Promise<PemPair> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const now = Date.now();
  const x509 = x509Lib();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomBytes(8)
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      name: `CN=${domains[0] ?? 'placeholder'}, O=Switchyard ACME placeholder`,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + validityMs),
      signingAlgorithm: alg,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.SubjectAlternativeNameExtension(domains.map((value) => ({ type: 'dns' as const, value }))),
      ],
    },
    webcrypto,
  );
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const key = createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' })
    .export({ format: 'pem', type: 'pkcs8' })
    .toString();
  return { cert: cert.toString('pem'), key };
}

/** Validity, issuer and serial of the leaf (first) certificate of a chain. */
export function certFacts(chainPem: string): CertFacts {
  const leaf = new X509Certificate(chainPem);
  return {
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    issuer: /CN=([^\n]+)/.exec(leaf.issuer)?.[1] ?? leaf.issuer,
    serial: leaf.serialNumber.toLowerCase(),
  };
}

/**
 * Checks a chain before it may replace anything: it parses, its leaf carries
 * our key, covers every domain and has not expired. Throws with the reason.
 */
export function verifyIssued(pair: PemPair, domains: readonly string[], now = Date.now()): CertFacts {
  const leaf = new X509Certificate(pair.cert);
  const ours = createPublicKey(pair.key).export({ format: 'der', type: 'spki' });
  const theirs = leaf.publicKey.export({ format: 'der', type: 'spki' });
  if (!ours.equals(theirs)) throw new Error('the certificate does not match its private key');
  // A wildcard domain must be listed as such; checkHost would take any name it matches.
  const sans = new Set(
    (leaf.subjectAltName ?? '')
      .split(', ')
      .filter((san) => san.startsWith('DNS:'))
      .map((san) => san.slice(4).toLowerCase()),
  );
  for (const d of domains) {
    const covered = d.startsWith('*.')
      ? sans.has(d.toLowerCase())
      : leaf.checkHost(d, { wildcards: false }) !== undefined;
    if (!covered) throw new Error(`the certificate does not cover ${d}`);
  }
  const facts = certFacts(pair.cert);
  if (facts.notAfter.getTime() <= now) throw new Error('the certificate has expired');
  return facts;
}
