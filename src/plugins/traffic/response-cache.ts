import type { HeaderMap } from '../../core/context.js';

/** A stored response: what a hit puts back on `ctx.response`. */
export interface CachedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  /** Epoch ms when it was stored, for `Age`. */
  storedAt: number;
}

/**
 * A backend of `proxy-cache`. The local one answers synchronously; a store
 * one returns promises that reject when the store fails: what a failure
 * means (a miss on reads, an error on purges) is the node's decision.
 */
export interface ResponseCache {
  readonly backend: 'local' | 'redis';
  /** The `stores:` name; '' for local. */
  readonly store: string;
  /** The entry, `undefined` on a miss; `'invalid'` when a stored value does not parse. */
  get(key: string): CachedResponse | undefined | 'invalid' | Promise<CachedResponse | undefined | 'invalid'>;
  put(key: string, entry: CachedResponse, ttlSeconds: number): void | Promise<void>;
  /** Removes every entry of namespace `id`; resolves to how many. */
  purge(id: string): Promise<number>;
}

/** Keys of one namespace all start with `<id>\u0001`; ids with control characters are rejected at load. */
export const namespacePrefix = (id: string): string => `${id}\u0001`;

/** Headers that describe one connection or one exchange, never a stored response. */
const NOT_STORED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'age',
  'set-cookie',
]);

/**
 * A copy of the headers worth replaying, without `statusHeader` (set afresh on every answer) and
 * without those still holding the value `earlier` (the request path's, set before the upstream
 * answered) gave them: they are one request's, and a hit runs those nodes again.
 */
export function storableHeaders(
  headers: HeaderMap,
  statusHeader: string,
  earlier: HeaderMap = {},
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || NOT_STORED.has(name) || name === statusHeader) continue;
    if (earlier[name] !== undefined && earlier[name] === value) continue;
    out[name] = Array.isArray(value) ? [...value] : value;
  }
  return out;
}

interface Encoded {
  v: 1;
  s: number;
  h: Record<string, string | string[]>;
  b: string;
  t: number;
}

/** One JSON string per entry, the body in base64: store values are text. */
export function encodeEntry(entry: CachedResponse): string {
  const encoded: Encoded = {
    v: 1,
    s: entry.status,
    h: entry.headers,
    b: entry.body.toString('base64'),
    t: entry.storedAt,
  };
  return JSON.stringify(encoded);
}

export function decodeEntry(text: string): CachedResponse | 'invalid' {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'invalid';
  }
  if (typeof parsed !== 'object' || parsed === null) return 'invalid';
  const e = parsed as Partial<Encoded>;
  if (
    e.v !== 1 ||
    typeof e.s !== 'number' ||
    typeof e.b !== 'string' ||
    typeof e.t !== 'number' ||
    typeof e.h !== 'object' ||
    e.h === null
  ) {
    return 'invalid';
  }
  return { status: e.s, headers: e.h, body: Buffer.from(e.b, 'base64'), storedAt: e.t };
}
