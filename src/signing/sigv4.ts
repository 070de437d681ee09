import { createHash, createHmac } from 'node:crypto';
import { percentEncode, percentEncodePath } from './percent-encode.js';

/** The algorithm name that opens the string to sign and the Authorization value. */
export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256';

/** The two headers whose names differ between providers (`x-amz-date` / `x-amz-security-token`…). */
export interface SigV4HeaderNames {
  /** Carries the signing time, `YYYYMMDDTHHMMSSZ`. */
  readonly date: string;
  /** Carries a temporary session token, when one is configured. */
  readonly securityToken: string;
}

export interface SigV4Options {
  /** Lower-case header names the signer adds and covers. */
  headerNames: SigV4HeaderNames;
  accessKey: string;
  secretKey: string;
  sessionToken?: string | undefined;
  region: string;
  service: string;
}

/** `[name, value]`; for queries both are decoded (the signer encodes them). */
export type Pair = readonly [string, string];

/** What the signature covers. */
export interface SigV4Request {
  method: string;
  /**
   * The path exactly as it goes on the request line (already percent-encoded,
   * dot segments resolved). Each segment is encoded once more, as the scheme
   * requires for every service but object storage.
   */
  path: string;
  /** Decoded query parameters, in any order. */
  query: readonly Pair[];
  /** Headers to cover besides the date and token headers; `host` at least. Names in any case. */
  headers: readonly Pair[];
  payload: Buffer | string | null;
}

/** Every intermediate value, so tests can compare them with published vectors. */
export interface SigV4Signature {
  /** The signing time, `YYYYMMDDTHHMMSSZ`. */
  date: string;
  canonicalRequest: string;
  /** The query as it appears in the canonical request; send exactly this and the receiver agrees. */
  canonicalQuery: string;
  stringToSign: string;
  /** `;`-joined lower-case names. */
  signedHeaders: string;
  /** Lower-case hex. */
  signature: string;
  authorization: string;
  /** Headers to send, flat `[name, value…]`: date, token when configured, then authorization. */
  headers: string[];
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * Version-4 HMAC-SHA256 request signing with fixed credentials and scope.
 * Build one per configured node; the derived signing key is cached per day.
 *
 * @example
 * const signer = new SigV4Signer({ headerNames: { date: 'x-amz-date', securityToken: 'x-amz-security-token' },
 *   accessKey: 'AKID', secretKey: 'secret', region: 'us-east-1', service: 'lambda' });
 * const { headers } = signer.sign({ method: 'GET', path: '/', query: [], headers: [['host', 'fn.example']], payload: null });
 */
export class SigV4Signer {
  readonly #options: SigV4Options;
  readonly #dateHeader: string;
  readonly #tokenHeader: string;
  #keyDay = '';
  #key: Buffer = Buffer.alloc(0);

  constructor(options: SigV4Options) {
    this.#options = options;
    this.#dateHeader = options.headerNames.date.toLowerCase();
    this.#tokenHeader = options.headerNames.securityToken.toLowerCase();
  }

  sign(request: SigV4Request, now: Date = new Date()): SigV4Signature {
    const { accessKey, sessionToken, region, service } = this.#options;
    const date = formatSigningDate(now);
    const day = date.slice(0, 8);

    const covered: Pair[] = [...request.headers, [this.#dateHeader, date]];
    if (sessionToken !== undefined) covered.push([this.#tokenHeader, sessionToken]);
    const { canonical: canonicalHeaders, names: signedHeaders } = canonicalizeHeaders(covered);

    const canonicalQuery = canonicalQueryString(request.query);
    const canonicalRequest = [
      request.method.toUpperCase(),
      request.path === '' ? '/' : percentEncodePath(request.path),
      canonicalQuery,
      canonicalHeaders,
      signedHeaders,
      payloadHash(request.payload),
    ].join('\n');

    const scope = `${day}/${region}/${service}/aws4_request`;
    const stringToSign = [SIGV4_ALGORITHM, date, scope, sha256Hex(canonicalRequest)].join('\n');
    const signature = createHmac('sha256', this.#signingKey(day)).update(stringToSign).digest('hex');
    const authorization = `${SIGV4_ALGORITHM} Credential=${accessKey}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;

    const headers = [this.#dateHeader, date];
    if (sessionToken !== undefined) headers.push(this.#tokenHeader, sessionToken);
    headers.push('authorization', authorization);
    return {
      date,
      canonicalRequest,
      canonicalQuery,
      stringToSign,
      signedHeaders,
      signature,
      authorization,
      headers,
    };
  }

  /** The key derived from the secret through the date, region, service chain; it changes once a day. */
  #signingKey(day: string): Buffer {
    if (day !== this.#keyDay) {
      const { secretKey, region, service } = this.#options;
      const kDate = hmac(`AWS4${secretKey}`, day);
      this.#key = hmac(hmac(hmac(kDate, region), service), 'aws4_request');
      this.#keyDay = day;
    }
    return this.#key;
  }
}

/** Encodes every name and value, then sorts by name and, for repeated names, by value. */
export function canonicalQueryString(query: readonly Pair[]): string {
  if (query.length === 0) return '';
  const encoded = query.map(([name, value]) => [percentEncode(name), percentEncode(value)] as const);
  encoded.sort(comparePairs);
  return encoded.map(([name, value]) => `${name}=${value}`).join('&');
}

/** `YYYYMMDDTHHMMSSZ` in UTC. */
export function formatSigningDate(date: Date): string {
  const iso = date.toISOString(); // 2015-08-30T12:36:00.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
}

/** Lower-case names sorted; values trimmed with inner runs of spaces collapsed; repeats joined by commas. */
function canonicalizeHeaders(headers: readonly Pair[]): { canonical: string; names: string } {
  const byName = new Map<string, string[]>();
  for (const [rawName, rawValue] of headers) {
    const name = rawName.toLowerCase();
    const value = rawValue.trim().replace(/\s+/g, ' ');
    const list = byName.get(name);
    if (list === undefined) byName.set(name, [value]);
    else list.push(value);
  }
  const names = [...byName.keys()].sort();
  let canonical = '';
  for (const name of names) canonical += `${name}:${byName.get(name)!.join(',')}\n`;
  return { canonical, names: names.join(';') };
}

function comparePairs(a: Pair, b: Pair): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] === b[1]) return 0;
  return a[1] < b[1] ? -1 : 1;
}

function payloadHash(payload: Buffer | string | null): string {
  if (payload === null || payload.length === 0) return EMPTY_SHA256;
  return createHash('sha256').update(payload).digest('hex');
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}
