import type { IncomingHttpHeaders } from 'node:http';
import type { HeaderMap, RequestPart } from '../core/context.js';
import { appendVia } from './via.js';

/**
 * Connection-specific fields (RFC 9110 §7.6.1, plus HTTP2-Settings of RFC 9113
 * §3.2.1). Trailer goes too: trailers are not relayed, so announcing them
 * would be a lie. Proxy-Authorization is end-to-end through us and stays.
 */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
] as const;

/**
 * Never copied from the client: hop-by-hop fields, fields we set ourselves, and
 * fields the outbound client derives from the buffered body (Content-Length;
 * Expect, whose 100-continue already happened on the inbound side).
 */
const REQUEST_SKIP = new Set<string>([
  ...HOP_BY_HOP,
  'host',
  'content-length',
  'expect',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'via',
]);

/** Index of the Host value in the list from {@link buildRequestHeaders}, so a retry can re-target it. */
export const HOST_VALUE_INDEX = 1;

/**
 * The header list sent upstream, flat `[name, value…]`: Host first, then the
 * client's end-to-end headers, then X-Forwarded-For (appended to), -Proto and
 * -Host, then Via with this gateway's entry appended (the loop guard, see ./via.ts).
 */
export function buildRequestHeaders(req: RequestPart, host: string): string[] {
  const headers = req.headers;
  const listed = connectionOptions(headers.connection);
  const out: string[] = ['host', host];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || REQUEST_SKIP.has(name)) continue;
    if (listed !== null && listed.includes(name)) continue;
    if (typeof value === 'string') out.push(name, value);
    else for (const item of value) out.push(name, item);
  }
  const prior = headers['x-forwarded-for'];
  const client = req.remoteAddress;
  const forwardedFor =
    prior === undefined || prior.length === 0
      ? client
      : `${typeof prior === 'string' ? prior : prior.join(', ')}, ${client}`;
  out.push('x-forwarded-for', forwardedFor, 'x-forwarded-proto', req.scheme);
  const originalHost = req.host !== '' ? req.host : firstValue(headers.host);
  if (originalHost !== undefined && originalHost !== '') out.push('x-forwarded-host', originalHost);
  out.push('via', appendVia(headers.via));
  return out;
}

const HOP_BY_HOP_SET = new Set<string>(HOP_BY_HOP);

/**
 * Makes undici's parsed response headers fit `ctx.response.headers`: drops
 * hop-by-hop fields (and those Connection lists) and always gives Set-Cookie as
 * a list. Returns a new map: copying beats `delete`, which would turn the
 * object into a slow dictionary for every later read (nearly every backend
 * sends `connection`).
 */
export function cleanResponseHeaders(headers: IncomingHttpHeaders): HeaderMap {
  const listed = connectionOptions(headers.connection);
  const out: HeaderMap = {};
  for (const name in headers) {
    if (HOP_BY_HOP_SET.has(name) || (listed !== null && listed.includes(name))) continue;
    const value = headers[name];
    out[name] = name === 'set-cookie' && typeof value === 'string' ? [value] : value;
  }
  return out;
}

/** The field names a Connection header lists (lowercased), or null when there is none. */
function connectionOptions(value: string | string[] | undefined): string[] | null {
  if (value === undefined) return null;
  // What nearly every peer sends: nothing to split.
  if (value === 'keep-alive' || value === 'close' || value === 'Keep-Alive' || value === 'Close') return null;
  const out: string[] = [];
  for (const part of typeof value === 'string' ? [value] : value) {
    for (const token of part.split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== '' && name !== 'close' && name !== 'keep-alive') out.push(name);
    }
  }
  return out.length === 0 ? null : out;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}

/**
 * undici's raw response headers as a map: lowercased names, latin1 values,
 * repeated fields as lists (what undici's own parsing gives). With
 * `dropHopByHop`, also what {@link cleanResponseHeaders} does, in the same
 * pass: hop-by-hop fields and those Connection lists left out, Set-Cookie
 * always a list.
 */
export function parseResponseHeaders(raw: Buffer[], dropHopByHop: boolean): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  let listed: string[] | null = null;
  if (dropHopByHop) {
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]!.length !== 10) continue;
      const name = raw[i]!.toString('latin1').toLowerCase();
      if (name !== 'connection') continue;
      const options = connectionOptions(raw[i + 1]!.toString('latin1'));
      if (options !== null) listed = listed === null ? options : listed.concat(options);
    }
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    if (dropHopByHop && (HOP_BY_HOP_SET.has(name) || (listed !== null && listed.includes(name)))) continue;
    const value = raw[i + 1]!.toString('latin1');
    const prior = Object.hasOwn(out, name) ? out[name] : undefined;
    if (prior === undefined) {
      if (name === '__proto__')
        Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      else out[name] = dropHopByHop && name === 'set-cookie' ? [value] : value;
    } else if (typeof prior === 'string') out[name] = [prior, value];
    else prior.push(value);
  }
  return out;
}
