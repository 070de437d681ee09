import type { KnownErrorCode } from '../core/errors.js';
import {
  ClientAbortedError,
  DeadlineExceededError,
  ExchangeError,
  errorCode,
  type ExchangePhase,
} from './errors.js';

/** What a failed exchange means for the caller: the catalog code, and whether to try elsewhere. */
export interface Classification {
  code: KnownErrorCode;
  /** True only when nothing reached the target, so another target may safely get the request. */
  retryable: boolean;
  /** Counts against the target's passive health. */
  targetFault: boolean;
  /** Short, log-friendly cause: `connection refused`, `TLS: self-signed certificate`… */
  reason: string;
}

const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ENOTFOUND: 'DNS lookup failed',
  EAI_AGAIN: 'DNS lookup failed (temporary)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connect timed out',
  UND_ERR_SOCKET: 'connection closed by target',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers in time',
  UND_ERR_BODY_TIMEOUT: 'response body idle timeout',
  UND_ERR_CLOSED: 'outbound pool closed',
  UND_ERR_DESTROYED: 'outbound pool closed',
};

const BUILD_ERRORS = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
]);
const POOL_CLOSED = new Set(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

/** Maps an `exchange()` rejection (or any thrown value) onto the error catalog. */
export function classifyFailure(err: unknown): Classification {
  return err instanceof ExchangeError ? classifyCause(err.cause, err.phase) : classifyCause(err, 'connect');
}

/** Maps a failure `cause` that happened in `phase` onto the error catalog. */
export function classifyCause(cause: unknown, phase: ExchangePhase): Classification {
  const code = errorCode(cause) ?? '';
  const notSent = phase === 'connect';

  if (cause instanceof ClientAbortedError) {
    return { code: 'UPSTREAM_CLIENT_ABORTED', retryable: false, targetFault: false, reason: cause.message };
  }
  if (cause instanceof DeadlineExceededError) {
    const reason = notSent ? `connect not completed within ${cause.timeoutMs} ms` : cause.message;
    return { code: 'UPSTREAM_TIMEOUT', retryable: notSent, targetFault: true, reason };
  }
  if (
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return { code: 'UPSTREAM_TIMEOUT', retryable: notSent, targetFault: true, reason: REASONS[code] ?? code };
  }
  if (BUILD_ERRORS.has(code)) {
    return {
      code: 'UPSTREAM_REQUEST_BUILD_ERROR',
      retryable: false,
      targetFault: false,
      reason: messageOf(cause),
    };
  }
  if (phase === 'body') {
    return {
      code: 'UPSTREAM_BODY_READ_ERROR',
      retryable: false,
      targetFault: true,
      reason: reasonOf(code, cause),
    };
  }
  return {
    code: 'UPSTREAM_CONNECTION_ERROR',
    retryable: notSent,
    targetFault: !POOL_CLOSED.has(code),
    reason: reasonOf(code, cause),
  };
}

function reasonOf(code: string, cause: unknown): string {
  const known = REASONS[code];
  if (known !== undefined) return `${known} (${code})`;
  // OpenSSL verification codes (DEPTH_ZERO_SELF_SIGNED_CERT, ERR_TLS_CERT_ALTNAME_INVALID…) carry a readable message.
  if (code !== '' && (code.includes('CERT') || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL'))) {
    return `TLS: ${messageOf(cause)} (${code})`;
  }
  return code === '' ? messageOf(cause) : `${messageOf(cause)} (${code})`;
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
