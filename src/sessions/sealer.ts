import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM with a key derived by SHA-256 from the configured secret, so a
 * secret of any length works and every instance with the same secret opens
 * every other instance's tokens. Tokens are base64url of
 * `version | iv | ciphertext | tag`; `context` is bound as additional data, so
 * a token sealed for one purpose (a session id, a plugin) opens for no other.
 */
export class Sealer {
  readonly #key: Buffer;

  constructor(secret: string) {
    this.#key = createHash('sha256').update(secret, 'utf8').digest();
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * A token sealed by the reference implementation with the same secret:
   * base64url of `nonce(12) | ciphertext | tag(16)`, no additional data, the
   * plaintext an 8-byte big-endian expiry (Unix seconds) then the payload.
   * The payload, or undefined when it does not open or has expired.
   */
  openReference(token: string): string | undefined {
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES + 8) return undefined;
    const iv = raw.subarray(0, IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]);
      if (plain.length < 8 || Number(plain.readBigUInt64BE(0)) < Date.now() / 1000) return undefined;
      return plain.subarray(8).toString('utf8');
    } catch {
      return undefined;
    }
  }

  /** The plaintext, or undefined for anything tampered, truncated, foreign or malformed. */
  open(token: string, context: string): string | undefined {
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < 1 + IV_BYTES + TAG_BYTES || raw[0] !== VERSION) return undefined;
    const iv = raw.subarray(1, 1 + IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const body = raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
