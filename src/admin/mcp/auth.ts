import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export type McpScope = 'read' | 'write';

/** Who is calling: resolved from the bearer token of each request, never remembered between requests. */
export interface McpPrincipal {
  scope: McpScope;
  /** `admin.mcp.tokens[].name`, for logs only. */
  name: string | undefined;
}

export interface McpTokenConfig {
  token?: string;
  scope?: McpScope;
  name?: string;
}

interface KnownToken {
  digest: Buffer;
  principal: McpPrincipal;
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Matches `Authorization: Bearer <token>` against the configured tokens.
 * Both sides are hashed to equal-length digests and compared with
 * timingSafeEqual against every token, so neither the length nor the
 * position of a match shows in the timing. A token without a scope reads.
 */
export function bearerVerifier(
  tokens: readonly McpTokenConfig[],
): (header: string | undefined) => McpPrincipal | undefined {
  const known: KnownToken[] = tokens
    .filter((t) => t.token !== undefined && t.token !== '')
    .map((t) => ({
      digest: digest(t.token as string),
      principal: { scope: t.scope ?? 'read', name: t.name },
    }));
  return (header) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
    const presented = digest(match?.[1] ?? '');
    let found: McpPrincipal | undefined;
    for (const entry of known) {
      if (timingSafeEqual(entry.digest, presented) && match !== null) found = entry.principal;
    }
    return found;
  };
}

/** The listener an MCP request arrived on, as its Origin must name it. */
export interface ListenerOrigin {
  scheme: 'http' | 'https';
  /** `admin.bind` as configured. */
  bind: string;
  /** The port the request arrived on (the configured one, or the bound one for port 0). */
  port: number;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]', '']);
const LOOPBACK_BINDS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** Host names under which a browser page on this listener has its origin. */
function ownHostNames(bind: string): string[] {
  const b = bind.toLowerCase();
  if (WILDCARD_BINDS.has(b) || LOOPBACK_BINDS.has(b)) return LOOPBACK_NAMES;
  return [b.includes(':') && !b.startsWith('[') ? `[${b}]` : b];
}

/**
 * DNS-rebinding guard of the MCP transport spec. A browser-sent `Origin` is
 * accepted only when it is same-origin with the listener itself — same
 * scheme, same port, and a host name of its bind address (the loopback
 * names 127.0.0.1, localhost and [::1] for a loopback or wildcard bind) —
 * or when it is listed verbatim in `allowed_origins`. `Host` is never
 * trusted: a rebinding page controls it. Requests without `Origin` (every
 * non-browser client) pass.
 */
export function originAllowed(
  headers: IncomingHttpHeaders,
  listener: ListenerOrigin,
  allowed: readonly string[],
): boolean {
  const origin = headers.origin;
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === 'null') return false;
  if (allowed.some((entry) => sameOrigin(entry, url))) return true;
  if (url.protocol !== `${listener.scheme}:`) return false;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (port !== listener.port) return false;
  return ownHostNames(listener.bind).includes(url.hostname.toLowerCase());
}

/** An `allowed_origins` entry matches by scheme, host and port; a malformed entry matches nothing. */
function sameOrigin(entry: string, url: URL): boolean {
  try {
    return new URL(entry).origin === url.origin;
  } catch {
    return false;
  }
}
