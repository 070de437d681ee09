import { hasInvalidHeaderChar, isHttpToken } from '../../runtime/native-http-parser.js';
import { LeanClientError } from './client-errors.js';

/** How the request body is framed on the wire. */
export type BodyFraming =
  /** No body bytes follow the head. */
  | { kind: 'none' }
  /** Exactly `length` bytes follow (a buffer, or a stream of announced length). */
  | { kind: 'length'; length: number }
  /** A stream of unknown length: chunked transfer coding. */
  | { kind: 'chunked' };

export interface RequestHead {
  /** The request line and header section, CRLF CRLF included; latin1. */
  text: string;
  framing: BodyFraming;
  /** The request asked for `Connection: close`: the connection is not reused after it. */
  close: boolean;
}

/** Methods whose requests carry a body even when it is empty (then `content-length: 0`). */
const EXPECTS_PAYLOAD = new Set(['PUT', 'POST', 'PATCH', 'QUERY', 'PROPFIND', 'PROPPATCH']);
/** Fields the client decides itself; a caller that sets one is refused, as undici refuses it. */
const REFUSED = new Set(['transfer-encoding', 'keep-alive', 'upgrade']);
/** A request target as undici accepts one: a path from `/` or an absolute http(s) URL, visible ASCII and latin1 only. */
const VALID_PATH = /^(?:\/|https?:\/\/)[\u0021-\u00ff]*$/;

function invalid(message: string): LeanClientError {
  return new LeanClientError(message, 'UND_ERR_INVALID_ARG');
}

/**
 * The head of one request, with the checks undici makes before it writes one (the same error codes,
 * so a bad header is still an `UPSTREAM_REQUEST_BUILD_ERROR`, docs/error-codes.md): method and
 * field names are tokens, values have no CR, LF or NUL, the fields undici frames itself are refused.
 * `bodyLength` is the byte length of a buffered body, -1 for a streamed body of unknown length,
 * or null for none; a `content-length` field given by the caller must agree with it.
 */
export function requestHead(
  method: string,
  path: string,
  headers: readonly string[],
  authority: string,
  bodyLength: number | null,
): RequestHead {
  if (!isHttpToken(method)) throw invalid('invalid request method');
  if (!VALID_PATH.test(path)) throw invalid('invalid request path');
  let text = `${method} ${path} HTTP/1.1\r\n`;
  let host = false;
  let close = false;
  let declared: number | null = null;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (!isHttpToken(name)) throw invalid('invalid header key');
    if (hasInvalidHeaderChar(value)) throw invalid(`invalid ${name} header`);
    // Only the names of these lengths need a lowercase comparison.
    const length = name.length;
    if (length === 4 || length === 6 || length === 7 || length === 10 || length === 14 || length === 17) {
      const lower = name.toLowerCase();
      if (lower === 'host') host = true;
      else if (lower === 'content-length') {
        if (!/^\d+$/.test(value)) throw invalid('invalid content-length header');
        declared = Number(value);
        continue;
      } else if (lower === 'connection') {
        const option = value.toLowerCase();
        if (option !== 'close' && option !== 'keep-alive') throw invalid('invalid connection header');
        if (option === 'close') close = true;
        continue;
      } else if (lower === 'expect') {
        throw new LeanClientError('expect header not supported', 'UND_ERR_NOT_SUPPORTED');
      } else if (REFUSED.has(lower)) throw invalid(`invalid ${lower} header`);
    }
    text += `${name}: ${value}\r\n`;
  }
  if (!host) text += `host: ${authority}\r\n`;
  text += close ? 'connection: close\r\n' : 'connection: keep-alive\r\n';
  let framing: BodyFraming;
  if (bodyLength === -1) {
    framing = declared === null ? { kind: 'chunked' } : { kind: 'length', length: declared };
  } else {
    const length = bodyLength ?? 0;
    if (declared !== null && length > 0 && declared !== length)
      throw new LeanClientError(
        'Request body length does not match content-length header',
        'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
      );
    framing = length > 0 || EXPECTS_PAYLOAD.has(method) ? { kind: 'length', length } : { kind: 'none' };
  }
  if (framing.kind === 'length') text += `content-length: ${framing.length}\r\n`;
  else if (framing.kind === 'chunked') text += 'transfer-encoding: chunked\r\n';
  return { text: `${text}\r\n`, framing, close };
}
