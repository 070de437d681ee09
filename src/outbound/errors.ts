/** Where an exchange was when it failed; decides whether another target may be tried. */
export type ExchangePhase =
  /** Not yet on a socket: queued, resolving, connecting or in the TLS handshake. */
  | 'connect'
  /** Written (or being written) to the socket, response headers not yet received. */
  | 'request'
  /** Headers received, body not finished. */
  | 'body';

/** The connect + request + headers deadline of one attempt elapsed. */
export class DeadlineExceededError extends Error {
  readonly code = 'SY_DEADLINE_EXCEEDED';

  constructor(readonly timeoutMs: number) {
    super(`no response headers within ${timeoutMs} ms`);
    this.name = 'DeadlineExceededError';
  }
}

/** The caller went away (client disconnected, stream destroyed downstream); not the target's fault. */
export class ClientAbortedError extends Error {
  readonly code = 'SY_CLIENT_ABORTED';

  constructor() {
    super('client closed the request');
    this.name = 'ClientAbortedError';
  }
}

/** Rejection of `exchange()`: the underlying failure plus the phase it happened in. */
export class ExchangeError extends Error {
  constructor(
    readonly phase: ExchangePhase,
    override readonly cause: Error,
  ) {
    super(cause.message, { cause });
    this.name = 'ExchangeError';
  }
}

/** The `code` property of Node system errors and undici errors, if any. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
