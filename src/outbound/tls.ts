import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

/** TLS settings of an upstream, as configured (file paths). */
export interface TlsSettings {
  /** Verify the target's certificate chain and name. */
  verify: boolean;
  /** PEM bundle that replaces the system roots. */
  caPath?: string | undefined;
  /** PEM client certificate and key for outbound mutual TLS; both or neither. */
  certPath?: string | undefined;
  keyPath?: string | undefined;
}

/** Loaded, checked TLS material; `fingerprint` identifies it in the pool registry. */
export interface TlsMaterial {
  readonly rejectUnauthorized: boolean;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly fingerprint: string;
}

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
  const ca = settings.caPath === undefined ? undefined : readPem(settings.caPath, 'ca');
  const cert = settings.certPath === undefined ? undefined : readPem(settings.certPath, 'cert');
  const key = settings.keyPath === undefined ? undefined : readPem(settings.keyPath, 'key');

  if (ca !== undefined) check('ca', () => createSecureContext({ ca }));
  if (cert !== undefined) check('cert', () => createSecureContext({ cert }));
  if (cert !== undefined && key !== undefined) check('key', () => createSecureContext({ cert, key }));

  const hash = createHash('sha256').update(settings.verify ? 'verify' : 'no-verify');
  for (const part of [ca, cert, key]) hash.update('\0').update(part ?? '');
  return {
    rejectUnauthorized: settings.verify,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    fingerprint: hash.digest('base64url').slice(0, 22),
  };
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
