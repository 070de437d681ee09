import type { IncomingHttpHeaders } from 'node:http';
import type { ServerRequest } from './server-request.js';
import { REQUEST_REFUSALS, type RequestRefusal } from '../core/errors.js';

/** `listener.headers_with_underscores`: what a client's header name with `_` does (docs/configuration.md). */
export type UnderscoreHeaders = 'drop' | 'reject' | 'allow';

/** The listener's request rules, read once when the data plane is built. */
export interface RequestRules {
  headersWithUnderscores: UnderscoreHeaders;
  /** `listener.allow_trace`: TRACE is answered 405 unless set. */
  allowTrace: boolean;
}

export const DEFAULT_RULES: RequestRules = { headersWithUnderscores: 'drop', allowTrace: false };

/** A request answered before routing (on HTTP/1.1 with `Connection: close`, as nginx answers). */
export type Refusal = RequestRefusal;

const {
  notImplemented: NOT_IMPLEMENTED,
  repeatedTransferEncoding: REPEATED_TE,
  transferEncodingOnHttp10: TE_ON_HTTP10,
  version: VERSION,
  trace: TRACE,
  underscore: UNDERSCORE,
} = REQUEST_REFUSALS;

/**
 * RFC 9112 refusals applied by both HTTP/1.1 fronts alike (the lean front and
 * node:http, whose parser lets these through), as nginx answers them: a major
 * version other than 1 in HTTP/1 syntax is 505; Transfer-Encoding must be a
 * lone `chunked` (§6.1: a coding we do not apply is 501, and dropping it would
 * forward another body than the client meant), repeated TE lines and TE on
 * HTTP/1.0 are 400;
 * TRACE is 405 unless `listener.allow_trace`; header names with `_` are 400
 * with `listener.headers_with_underscores: reject`.
 */
export function refusal(req: ServerRequest, rules: RequestRules): Refusal | undefined {
  if (!('stream' in req)) {
    // Not HTTP/2 (whose requests carry their stream): the HTTP/1 syntax of either front.
    if (req.httpVersionMajor !== 1) return VERSION;
    const te = req.headers['transfer-encoding'];
    if (te !== undefined) {
      if (countFields(req.rawHeaders, 'transfer-encoding') > 1) return REPEATED_TE;
      // RFC 9112 §6.1: the framing of an HTTP/1.0 message with TE is faulty (nginx refuses it).
      if (req.httpVersionMinor === 0) return TE_ON_HTTP10;
      if (te.trim() === '') return NOT_IMPLEMENTED;
      // A list whose last coding is not chunked is the parser's to refuse (400, right after the
      // head: node:http has already emitted the request then, and must not get a 501 out first).
      const last = te.slice(te.lastIndexOf(',') + 1).trim();
      if (te.includes(',') && last.toLowerCase() === 'chunked') return NOT_IMPLEMENTED;
    }
  }
  if (req.method === 'TRACE' && !rules.allowTrace) return TRACE;
  if (rules.headersWithUnderscores === 'reject' && hasUnderscoreName(req.rawHeaders)) return UNDERSCORE;
  return undefined;
}

/** Field lines named `lower` (its lowercase name) in a flat `[name, value…]` list. */
export function countFields(raw: readonly string[], lower: string): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lower.length && name.toLowerCase() === lower) count++;
  }
  return count;
}

/** True when a field name of the flat `[name, value…]` list holds `_`. */
export function hasUnderscoreName(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.includes('_')) return true;
  return false;
}

/**
 * The header map without the fields whose name holds `_` (nginx's
 * `underscores_in_headers off`): CGI-style upstreams read `X_Forwarded_For`
 * and `X-Forwarded-For` as one variable, so a client could spoof what the
 * gateway sets. Routing, policies and the upstream never see them.
 */
export function withoutUnderscoreNames(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in headers) if (!name.includes('_')) out[name] = headers[name];
  return out;
}

/**
 * A Host value is `uri-host [":" port]` (RFC 9112 §3.2, RFC 3986 §3.2.2): a
 * reg-name or IPv4 address, or an IP literal in brackets. Empty values,
 * spaces, `/`, `\`, `@`, `?` and the like are 400, as nginx answers most of
 * them; the value becomes `X-Forwarded-Host` and `$host` otherwise.
 */
export function hostValueProblem(host: string): string | undefined {
  if (!HOST_VALUE.test(host)) return 'invalid Host header value';
  if (host.includes('..')) return 'invalid Host header value';
  return undefined;
}

const HOST_VALUE =
  /^(?:[A-Za-z0-9\-._~%!$&'()*+,;=]+|\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\])(?::[0-9]*)?$/;

/**
 * What is wrong with the path part of a request target that the path
 * normaliser lets through, as nginx answers it 400: an encoded NUL (`%00`), or
 * a `%` not followed by two hex digits (RFC 3986 §2.1). The query is the
 * upstream's to read.
 */
export function pathEscapeProblem(url: string): string | undefined {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.includes('%')) return undefined;
  if (path.includes('%00')) return 'request path must not hold an encoded NUL (%00)';
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return 'request path holds a malformed percent escape';
  return undefined;
}

/**
 * HTTP/1.1 connections that were answered with `Connection: close` before
 * routing. node:http hands pipelined requests over before the first answer
 * went out; those must not reach the graph either (the lean front stops
 * reading by itself).
 */
const closing = new WeakSet<object>();

/** After a refusal that closes: nothing more of this HTTP/1.1 connection is served. */
export function closeAfterRefusal(req: ServerRequest): void {
  if (!('stream' in req)) closing.add(req.socket);
}

export function isClosing(req: ServerRequest): boolean {
  return closing.has(req.socket);
}
