/**
 * Why a store operation failed. Callers map these to their own public codes
 * (store nodes: `STORE_ERROR`, sessions: `SESSION_STORE_ERROR`).
 */
export type StoreErrorCode =
  /** No connection: refused, reset, closed, or the client is reconnecting. */
  | 'STORE_UNAVAILABLE'
  /** The operation did not finish within the store's `connect_budget_ms`. */
  | 'STORE_TIMEOUT'
  /** The stored value has the wrong shape for the command (INCR on text, wrong type). */
  | 'STORE_VALUE_INVALID'
  /** The server answered with an error (script error, unknown command, auth). */
  | 'STORE_COMMAND_FAILED';

export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    /** Name of the `stores:` entry. */
    readonly store: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreError';
  }
}
