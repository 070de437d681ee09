import { createHash, X509Certificate } from 'node:crypto';
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

interface Tlv {
  tag: number;
  start: number;
  /** First content byte. */
  body: number;
  end: number;
}

function tlv(buf: Buffer, offset: number): Tlv {
  if (offset + 2 > buf.length) throw new Error('truncated DER');
  const tag = buf[offset] as number;
  let length = buf[offset + 1] as number;
  let body = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error('unsupported DER length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + (buf[body++] as number);
  }
  const end = body + length;
  if (end > buf.length) throw new Error('truncated DER');
  return { tag, start: offset, body, end };
}

function children(buf: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.body; at < parent.end;) {
    const child = tlv(buf, at);
    out.push(child);
    at = child.end;
  }
  return out;
}

function child(buf: Buffer, parent: Tlv, index: number, tag?: number): Tlv {
  const c = children(buf, parent)[index];
  if (c === undefined || (tag !== undefined && c.tag !== tag)) throw new Error('unexpected DER structure');
  return c;
}

function encode(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const length =
    n < 0x80
      ? Buffer.from([n])
      : n < 0x100
        ? Buffer.from([0x81, n])
        : n < 0x10000
          ? Buffer.from([0x82, n >> 8, n & 0xff])
          : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

const SEQUENCE = 0x30;
const OCTET_STRING = 0x04;
/** AlgorithmIdentifier { sha1, NULL }: the CertID hash every responder accepts. */
const SHA1_ALGORITHM = Buffer.from('300906052b0e03021a0500', 'hex');

/** tbsCertificate's fields, skipping the optional `[0] version`. */
function tbsFields(cert: Buffer): Tlv[] {
  const tbs = child(cert, tlv(cert, 0), 0, SEQUENCE);
  const fields = children(cert, tbs);
  return fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
}

/** An OCSPRequest for one certificate; `serial` is the certificate's serial INTEGER, as encoded. */
export function buildOcspRequest(certificate: Buffer, issuer: Buffer): { der: Buffer; serial: Buffer } {
  const fields = tbsFields(certificate);
  const serialField = fields[0];
  const issuerName = fields[2];
  const spki = tbsFields(issuer)[5];
  if (serialField === undefined || issuerName === undefined || spki === undefined)
    throw new Error('unexpected certificate structure');
  const serial = certificate.subarray(serialField.start, serialField.end);
  const key = child(issuer, spki, 1, 0x03);
  const sha1 = (b: Buffer) => createHash('sha1').update(b).digest();
  const certId = encode(
    SEQUENCE,
    SHA1_ALGORITHM,
    encode(OCTET_STRING, sha1(certificate.subarray(issuerName.start, issuerName.end))),
    // The key's BIT STRING value without its unused-bits byte.
    encode(OCTET_STRING, sha1(issuer.subarray(key.body + 1, key.end))),
    serial,
  );
  const der = encode(SEQUENCE, encode(SEQUENCE, encode(SEQUENCE, encode(SEQUENCE, certId))));
  return { der, serial };
}

function generalizedTime(buf: Buffer, t: Tlv): number {
  const text = buf.toString('latin1', t.body, t.end);
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.\d+)?Z$/.exec(text);
  if (m === null) throw new Error(`unreadable GeneralizedTime ${text}`);
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

const RESPONSE_STATUS = [
  'successful',
  'malformedRequest',
  'internalError',
  'tryLater',
  '4',
  'sigRequired',
  'unauthorized',
];

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
  const top = tlv(der, 0);
  const statusField = child(der, top, 0, 0x0a);
  const code = der[statusField.body] ?? -1;
  if (code !== 0) throw new Error(`responder status ${RESPONSE_STATUS[code] ?? code}`);
  const responseBytes = child(der, child(der, top, 1, 0xa0), 0, SEQUENCE);
  const basicOctets = child(der, responseBytes, 1, OCTET_STRING);
  const basic = tlv(der, basicOctets.body);
  const data = child(der, basic, 0, SEQUENCE);
  const fields = children(der, data);
  const rest = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
  const responses = rest[2];
  if (responses === undefined || responses.tag !== SEQUENCE)
    throw new Error('unexpected OCSP response structure');
  for (const single of children(der, responses)) {
    const [certId, status, thisUpdate, ...more] = children(der, single);
    if (certId === undefined || status === undefined || thisUpdate === undefined) continue;
    const idSerial = children(der, certId)[3];
    if (idSerial === undefined || !der.subarray(idSerial.start, idSerial.end).equals(serial)) continue;
    const next = more.find((f) => f.tag === 0xa0);
    return {
      status: status.tag === 0x80 ? 'good' : status.tag === 0xa1 ? 'revoked' : 'unknown',
      thisUpdate: generalizedTime(der, thisUpdate),
      nextUpdate: next === undefined ? undefined : generalizedTime(der, child(der, next, 0, 0x18)),
    };
  }
  throw new Error('the OCSP response is not about the served certificate');
}
