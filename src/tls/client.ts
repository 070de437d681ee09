import { createHash, createPrivateKey } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

/** TLS settings of an upstream, as configured (file paths). */
export interface TlsSettings {
  /** Verify the target's certificate chain and name. */
  verify: boolean;
  /** PEM bundle that replaces the system roots. */
  caPath?: string | undefined;
  /** PEM text of a CA bundle given inline (instead of `caPath`). */
  caPem?: string | undefined;
  /** PEM client certificate and key for outbound mutual TLS; both or neither. */
  certPath?: string | undefined;
  keyPath?: string | undefined;
  /** Passphrase of an encrypted `keyPath`; the key is decrypted when read (and re-read). */
  keyPassword?: string | undefined;
  /** Name sent as SNI and checked against the certificate instead of the target's host. */
  serverName?: string | undefined;
}

/**
 * Loaded, checked TLS material; `fingerprint` identifies it in the pool
 * registry. With a client certificate, `cert` and `key` read the pair as it
 * is on disk now (docs/tls.md#outbound-tls): each read made when a new
 * connection opens sees a replaced pair.
 */
export interface TlsMaterial {
  readonly rejectUnauthorized: boolean;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
  readonly fingerprint: string;
}

/** How often, at most, the client certificate files are checked for a change (on new connections only). */
export const CLIENT_PAIR_CHECK_MS = 1000;

export type TlsField = 'ca' | 'cert' | 'key';

/** A TLS file that cannot be read or parsed; `field` says which one. */
export class TlsMaterialError extends Error {
  constructor(
    readonly field: TlsField,
    message: string,
  ) {
    super(message);
    this.name = 'TlsMaterialError';
  }
}

/**
 * Reads and checks the PEM files once, at configuration time, so a bad file
 * rejects the configuration instead of failing requests.
 */
export function loadTlsMaterial(settings: TlsSettings): TlsMaterial {
  const ca =
    settings.caPem !== undefined
      ? inlinePem(settings.caPem, 'ca')
      : settings.caPath === undefined
        ? undefined
        : readPem(settings.caPath, 'ca');
  const cert = settings.certPath === undefined ? undefined : readPem(settings.certPath, 'cert');
  const password = settings.keyPassword;
  const key =
    settings.keyPath === undefined ? undefined : decryptKey(readPem(settings.keyPath, 'key'), password, true);

  if (ca !== undefined) check('ca', () => createSecureContext({ ca }));
  if (cert !== undefined) check('cert', () => createSecureContext({ cert }));
  if (cert !== undefined && key !== undefined) check('key', () => createSecureContext({ cert, key }));

  const hash = createHash('sha256').update(settings.verify ? 'verify' : 'no-verify');
  for (const part of [ca, cert, key]) hash.update('\0').update(part ?? '');
  if (settings.serverName !== undefined) hash.update('\0sni\0').update(settings.serverName);
  const servername = settings.serverName === undefined ? {} : { servername: settings.serverName };
  const fingerprint = hash.digest('base64url').slice(0, 22);
  if (
    cert !== undefined &&
    key !== undefined &&
    settings.certPath !== undefined &&
    settings.keyPath !== undefined
  ) {
    const pair = liveClientPair(settings.certPath, settings.keyPath, { cert, key }, password);
    return {
      rejectUnauthorized: settings.verify,
      ...(ca === undefined ? {} : { ca }),
      // Only `cert` looks at the files: callers read cert then key, so the two always match.
      get cert() {
        return pair.check().cert;
      },
      get key() {
        return pair.current().key;
      },
      ...servername,
      fingerprint,
    };
  }
  return {
    rejectUnauthorized: settings.verify,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...servername,
    fingerprint,
  };
}

interface Pair {
  cert: Buffer;
  key: Buffer;
}

/**
 * The client pair, re-read when either file's size, mtime or inode changes
 * (checked at most every CLIENT_PAIR_CHECK_MS). A new pair that does not load
 * or whose key does not match is ignored and the previous pair stays until
 * the files change again.
 */
function liveClientPair(
  certPath: string,
  keyPath: string,
  initial: Pair,
  password: string | undefined,
): { check(): Pair; current(): Pair } {
  const stamp = () => {
    const parts: string[] = [];
    for (const path of [certPath, keyPath]) {
      try {
        const st = statSync(path);
        parts.push(`${st.ino}:${st.size}:${st.mtimeMs}`);
      } catch {
        parts.push('missing');
      }
    }
    return parts.join('|');
  };
  let current = initial;
  let seen = stamp();
  let checkedAt = Date.now();
  const check = (): Pair => {
    const now = Date.now();
    if (now - checkedAt < CLIENT_PAIR_CHECK_MS) return current;
    checkedAt = now;
    const next = stamp();
    if (next === seen) return current;
    seen = next;
    try {
      const cert = readFileSync(certPath);
      const key = decryptKey(readFileSync(keyPath), password, false);
      createSecureContext({ cert, key });
      current = { cert, key };
    } catch {
      // Half-written or mismatched pair: keep the previous one; the next change is tried again.
    }
    return current;
  };
  return { check, current: () => current };
}

/**
 * An encrypted PEM key decrypted with `password` (PKCS#8 PEM out), so every connection uses it
 * as a plain key; the key as read without one. `named`: a failure says why (at load), else it
 * only throws (a reload keeps the previous pair). The message never holds the password.
 */
function decryptKey(key: Buffer, password: string | undefined, named: boolean): Buffer {
  if (password === undefined) return key;
  try {
    return Buffer.from(
      createPrivateKey({ key, format: 'pem', passphrase: password })
        .export({ type: 'pkcs8', format: 'pem' })
        .toString(),
    );
  } catch (err) {
    if (!named) throw err;
    throw new TlsMaterialError(
      'key',
      `cannot be decrypted with the key password (wrong password, or not a PEM private key): ${(err as Error).message.replace(/^error:[0-9A-F]+:/, '')}`,
    );
  }
}

function readPem(path: string, field: TlsField): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new TlsMaterialError(field, `cannot read '${path}': ${(err as Error).message}`);
  }
  if (!data.includes('-----BEGIN ')) throw new TlsMaterialError(field, `'${path}' is not a PEM file`);
  return data;
}

function inlinePem(text: string, field: TlsField): Buffer {
  if (!text.includes('-----BEGIN '))
    throw new TlsMaterialError(field, 'is not PEM text (no -----BEGIN line)');
  return Buffer.from(text);
}

function check(field: TlsField, build: () => unknown): void {
  try {
    build();
  } catch (err) {
    throw new TlsMaterialError(
      field,
      `invalid ${field === 'ca' ? 'CA bundle' : field}: ${(err as Error).message}`,
    );
  }
}
