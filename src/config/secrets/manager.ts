/**
 * A secret manager: reads the document at a path. What a reference's `#field` picks from it is
 * the store's (`pickField`). Errors carry only what is safe to log: never a value, never a
 * credential, never a piece of the document.
 */
export interface SecretManager {
  readonly type: string;
  /** How often every value of this manager is read again. */
  readonly refreshMs: number;
  /** A string (the whole secret) or a mapping of fields. */
  load(path: string): Promise<string | Record<string, unknown>>;
  /**
   * Loads what the manager's first read needs that blocks the event loop (a client library):
   * awaited before any manager's request starts, so the import cannot run out another manager's
   * request timeout. Failures are the first `load`'s to report.
   */
  warmUp?(): Promise<void>;
  close(): void;
}

/** A failure whose message is safe to log and to show in a validation error. */
export class SecretError extends Error {
  override name = 'SecretError';
}

/** The field of a loaded document; a string document is parsed as a JSON object for a field. */
export function pickField(document: string | Record<string, unknown>, field: string | undefined): string {
  if (field === undefined) {
    if (typeof document === 'string') return document;
    throw new SecretError('holds several fields: name one with #field');
  }
  let fields: unknown = document;
  if (typeof document === 'string') {
    try {
      fields = JSON.parse(document);
    } catch {
      // Not the parser's message: it quotes the text, which is the secret.
      throw new SecretError(`is not a JSON object, so it has no field '${field}'`);
    }
  }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields))
    throw new SecretError(`is not a JSON object, so it has no field '${field}'`);
  const value = (fields as Record<string, unknown>)[field];
  if (value === undefined || value === null) throw new SecretError(`has no field '${field}'`);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new SecretError(`field '${field}' is not a string`);
}
