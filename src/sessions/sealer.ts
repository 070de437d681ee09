import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/** Tokens of the previous release: key = SHA-256(secret). Opened, never sealed any more. */
const LEGACY_VERSION = 1;
/** Key = HKDF-SHA-256(secret, salt, info naming the purpose). */
const HKDF_VERSION = 2;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_SALT = Buffer.from('switchyard sealer v2', 'utf8');

/** One secret, or several for rotation: the first seals, any of them opens. */
export type SecretList = string | readonly string[];

/** What sealed data is for; each purpose gets its own HKDF `info`, hence its own key. */
export type SealPurpose = 'session' | 'login-flow' | 'data';

interface Keys {
  hkdf: Buffer;
  legacy: Buffer;
}

/**
 * AES-256-GCM under keys derived from the configured secrets, so a secret of
 * any length works and every instance with the same secrets opens every other
 * instance's tokens. Tokens are base64url of `version | iv | ciphertext | tag`;
 * `context` is bound as additional data, so a token sealed for one use (a
 * session id, a plugin) opens for no other.
 *
 * Rotation (docs/sessions.md#rotating-the-secret): the first secret seals,
 * every secret opens. Keys come from HKDF-SHA-256 with an `info` string per
 * purpose (sessions, login flows, other sealed data); tokens of the previous
 * release (key = one SHA-256 of the secret, version byte 1) still open, so an
 * upgrade logs nobody out, but nothing is sealed that way any more.
 */
export class Sealer {
  readonly #keys: readonly Keys[];

  constructor(secrets: SecretList, purpose: SealPurpose = 'data') {
    const list = typeof secrets === 'string' ? [secrets] : secrets;
    if (list.length === 0) throw new Error('Sealer needs at least one secret');
    const info = Buffer.from(`switchyard ${purpose} aes-256-gcm`, 'utf8');
    this.#keys = list.map((secret) => ({
      hkdf: Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), HKDF_SALT, info, 32)),
      legacy: createHash('sha256').update(secret, 'utf8').digest(),
    }));
  }

  /** Seals with the first secret's HKDF key. */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', (this.#keys[0] as Keys).hkdf, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([HKDF_VERSION]), iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * A token sealed by the reference implementation with one of the secrets:
   * base64url of `nonce(12) | ciphertext | tag(16)`, no additional data, the
   * key SHA-256(secret), the plaintext an 8-byte big-endian expiry (Unix
   * seconds) then the payload. The payload, or undefined when it does not
   * open or has expired.
   */
  openReference(token: string): string | undefined {
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES + 8) return undefined;
    const iv = raw.subarray(0, IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(IV_BYTES, raw.length - TAG_BYTES);
    for (const { legacy } of this.#keys) {
      const plain = decrypt(legacy, iv, body, tag, undefined);
      if (plain === undefined) continue;
      if (plain.length < 8 || Number(plain.readBigUInt64BE(0)) < Date.now() / 1000) return undefined;
      return plain.subarray(8).toString('utf8');
    }
    return undefined;
  }

  /** The plaintext, or undefined for anything tampered, truncated, foreign or malformed. */
  open(token: string, context: string): string | undefined {
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < 1 + IV_BYTES + TAG_BYTES) return undefined;
    const version = raw[0];
    if (version !== HKDF_VERSION && version !== LEGACY_VERSION) return undefined;
    const iv = raw.subarray(1, 1 + IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES);
    const aad = Buffer.from(context, 'utf8');
    for (const keys of this.#keys) {
      const plain = decrypt(version === HKDF_VERSION ? keys.hkdf : keys.legacy, iv, body, tag, aad);
      if (plain !== undefined) return plain.toString('utf8');
    }
    return undefined;
  }
}

function decrypt(
  key: Buffer,
  iv: Buffer,
  body: Buffer,
  tag: Buffer,
  aad: Buffer | undefined,
): Buffer | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    if (aad !== undefined) decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]);
  } catch {
    return undefined;
  }
}
