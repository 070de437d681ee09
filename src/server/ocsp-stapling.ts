import { createHash, X509Certificate } from 'node:crypto';
import {
  BasicOCSPResponse,
  CertID,
  id_pkix_ocsp_basic,
  OCSPRequest,
  OCSPResponse,
  OCSPResponseStatus,
  Request,
  TBSRequest,
} from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate } from '@peculiar/asn1-x509';
import type { Server as TlsServer } from 'node:tls';
import type { TlsConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';

/**
 * OCSP stapling for the certificates a TLS listener serves
 * (docs/tls.md#ocsp-stapling): the response for each certificate is fetched
 * from its responder (the certificate's Authority Information Access URL, or
 * `tls.ocsp_stapling.responder_url`), kept until its `nextUpdate` and
 * refreshed every `refresh_seconds`, and stapled to handshakes that ask for
 * it. A failure never fails a handshake: the client gets no staple and the
 * gateway logs a WARN.
 */

/** How long one responder request may take. */
export const OCSP_FETCH_TIMEOUT_MS = 5000;
/** Served certificates tracked at once (default + SNI, plus ones replaced on disk). */
const MAX_CERTIFICATES = 1024;
/** After a failed fetch, the next try waits this long (or `refresh_seconds` when shorter). */
const RETRY_AFTER_FAILURE_MS = 60_000;

type OcspStaplingConfig = NonNullable<TlsConfig['ocsp_stapling']>;
type OcspCallback = (err: Error | null, response?: Buffer | null) => void;

interface Entry {
  /** The last good DER OCSPResponse, if any. */
  response: Buffer | undefined;
  /** Do not staple `response` after this (its nextUpdate), epoch ms. */
  expiresAt: number;
  /** Fetch again at or after this, epoch ms. */
  refreshAt: number;
  inflight: Promise<void> | undefined;
  /** A configuration problem already logged (no issuer, no responder URL). */
  warned: boolean;
}

export type CertStatus = 'good' | 'revoked' | 'unknown';

export class OcspStapler {
  readonly #config: OcspStaplingConfig;
  readonly #logger: Logger;
  readonly #label: string;
  /** Keyed by the SHA-256 of the served certificate's DER (default and SNI certificates alike). */
  readonly #cache = new Map<string, Entry>();
  #closed = false;

  constructor(config: OcspStaplingConfig, logger: Logger, label: string) {
    this.#config = config;
    this.#logger = logger;
    this.#label = label;
  }

  /** Answers the server's 'OCSPRequest' events (emitted only for clients that ask for a staple). */
  attach(server: TlsServer): void {
    server.on('OCSPRequest', this.#onRequest);
  }

  close(): void {
    this.#closed = true;
    this.#cache.clear();
  }

  readonly #onRequest = (certificate: Buffer, issuer: Buffer | null, callback: OcspCallback): void => {
    const key = createHash('sha256').update(certificate).digest('hex');
    let entry = this.#cache.get(key);
    if (entry === undefined) {
      entry = { response: undefined, expiresAt: 0, refreshAt: 0, inflight: undefined, warned: false };
      // Replaced certificates leave their entries behind; drop the oldest past a bound.
      if (this.#cache.size >= MAX_CERTIFICATES) this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(key, entry);
    }
    const current = entry;
    const now = Date.now();
    if (now >= current.refreshAt && current.inflight === undefined && !this.#closed) {
      current.inflight = this.#refresh(current, certificate, issuer).finally(() => {
        current.inflight = undefined;
      });
    }
    const usable = () =>
      current.response !== undefined && Date.now() < current.expiresAt ? current.response : null;
    const staple = usable();
    // Nothing to staple yet (first handshake, or the last response expired): wait for the fetch, bounded by its timeout.
    if (staple === null && current.inflight !== undefined) {
      current.inflight.then(
        () => callback(null, usable()),
        () => callback(null, null),
      );
      return;
    }
    callback(null, staple);
  };

  async #refresh(entry: Entry, certificate: Buffer, issuer: Buffer | null): Promise<void> {
    const retryAt = Date.now() + Math.min(this.#config.refresh_seconds * 1000, RETRY_AFTER_FAILURE_MS);
    let subject = '(unparsable certificate)';
    try {
      const cert = new X509Certificate(certificate);
      subject = cert.subject.replace(/\n/g, ', ');
      if (issuer === null) {
        entry.refreshAt = Number.POSITIVE_INFINITY;
        if (!entry.warned) {
          entry.warned = true;
          this.#logger.warn(
            { listener: this.#label, key: 'tls.ocsp_stapling', certificate: subject },
            'OCSP stapling off for this certificate: its issuer is not in the certificate file (put the chain in cert_path)',
          );
        }
        return;
      }
      const url = this.#config.responder_url ?? responderFromAia(cert.infoAccess);
      if (url === undefined) {
        entry.refreshAt = Number.POSITIVE_INFINITY;
        if (!entry.warned) {
          entry.warned = true;
          this.#logger.warn(
            { listener: this.#label, key: 'tls.ocsp_stapling.responder_url', certificate: subject },
            'OCSP stapling off for this certificate: it names no OCSP responder; set tls.ocsp_stapling.responder_url',
          );
        }
        return;
      }
      const request = buildOcspRequest(certificate, issuer);
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/ocsp-request', accept: 'application/ocsp-response' },
        body: request.der,
        signal: AbortSignal.timeout(OCSP_FETCH_TIMEOUT_MS),
      });
      if (!res.ok) throw new Error(`responder ${url} answered HTTP ${res.status}`);
      const der = Buffer.from(await res.arrayBuffer());
      const parsed = parseOcspResponse(der, request.serial);
      const now = Date.now();
      if (parsed.nextUpdate !== undefined && parsed.nextUpdate <= now) {
        throw new Error(`responder ${url} sent a response already past its nextUpdate`);
      }
      if (this.#closed) return;
      entry.response = der;
      entry.expiresAt = parsed.nextUpdate ?? Number.POSITIVE_INFINITY;
      entry.refreshAt = Math.min(now + this.#config.refresh_seconds * 1000, entry.expiresAt);
      const log = { listener: this.#label, certificate: subject, status: parsed.status, responder: url };
      if (parsed.status === 'good') this.#logger.debug(log, 'OCSP response fetched');
      else this.#logger.warn(log, `OCSP responder reports the served certificate ${parsed.status}`);
    } catch (err) {
      entry.refreshAt = retryAt;
      this.#logger.warn(
        {
          listener: this.#label,
          key: 'tls.ocsp_stapling',
          certificate: subject,
          err: (err as Error).message,
        },
        'OCSP response fetch failed; handshakes go on without a fresh staple',
      );
    }
  }
}

/** The first `OCSP - URI:` of a certificate's Authority Information Access. */
function responderFromAia(infoAccess: string | undefined): string | undefined {
  for (const line of (infoAccess ?? '').split('\n')) {
    const m = /^OCSP - URI:(https?:\/\/\S+)$/.exec(line.trim());
    if (m?.[1] !== undefined) return m[1];
  }
  return undefined;
}

// ---- Minimal DER (RFC 6960 request building, response reading) ----

/** CertID's hash: SHA-1, the one every responder accepts (RFC 6960 §4.1.1, RFC 5019 §2.1.1). */
const SHA1_OID = '1.3.14.3.2.26';

/** An OCSPRequest for one certificate; `serial` is the certificate's serial number, as encoded. */
export function buildOcspRequest(certificate: Buffer, issuer: Buffer): { der: Buffer; serial: Buffer } {
  const cert = AsnConvert.parse(certificate, Certificate).tbsCertificate;
  const issuerKey = AsnConvert.parse(issuer, Certificate).tbsCertificate.subjectPublicKeyInfo;
  const sha1 = (b: ArrayBuffer) => createHash('sha1').update(new Uint8Array(b)).digest();
  const serial = Buffer.from(cert.serialNumber);
  const reqCert = new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA1_OID, parameters: null }),
    issuerNameHash: new OctetString(sha1(AsnConvert.serialize(cert.issuer))),
    // The key's BIT STRING value without its unused-bits byte.
    issuerKeyHash: new OctetString(sha1(issuerKey.subjectPublicKey)),
    serialNumber: toArrayBuffer(serial),
  });
  const request = new OCSPRequest({
    tbsRequest: new TBSRequest({ requestList: [new Request({ reqCert })] }),
  });
  return { der: Buffer.from(AsnConvert.serialize(request)), serial };
}

function toArrayBuffer(bytes: Buffer): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/**
 * Reads an OCSPResponse: the status of the certificate with this `serial`
 * and the response's nextUpdate. Throws when the responder did not answer
 * `successful` or the response is not about that certificate. The signature
 * is the client's to check.
 */
export function parseOcspResponse(
  der: Buffer,
  serial: Buffer,
): { status: CertStatus; thisUpdate: number; nextUpdate: number | undefined } {
  const response = AsnConvert.parse(der, OCSPResponse);
  if (response.responseStatus !== OCSPResponseStatus.successful)
    throw new Error(
      `responder status ${OCSPResponseStatus[response.responseStatus] ?? String(response.responseStatus)}`,
    );
  if (response.responseBytes === undefined) throw new Error('unexpected OCSP response structure');
  if (response.responseBytes.responseType !== id_pkix_ocsp_basic)
    throw new Error(`unsupported OCSP response type ${response.responseBytes.responseType}`);
  const basic = AsnConvert.parse(response.responseBytes.response, BasicOCSPResponse);
  for (const single of basic.tbsResponseData.responses) {
    if (!Buffer.from(single.certID.serialNumber).equals(serial)) continue;
    const status = single.certStatus;
    return {
      status: status.good !== undefined ? 'good' : status.revoked !== undefined ? 'revoked' : 'unknown',
      thisUpdate: single.thisUpdate.getTime(),
      nextUpdate: single.nextUpdate?.getTime(),
    };
  }
  throw new Error('the OCSP response is not about the served certificate');
}
