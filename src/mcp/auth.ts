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

/**
 * DNS-rebinding guard of the MCP transport spec: a browser-sent `Origin`
 * must name this very listener (scheme-less comparison of the authority
 * with `Host`) or be listed in `allowed_origins`. Requests without
 * `Origin` (every non-browser client) pass.
 */
export function originAllowed(headers: IncomingHttpHeaders, allowed: readonly string[]): boolean {
  const origin = headers.origin;
  if (origin === undefined) return true;
  if (allowed.includes(origin)) return true;
  let authority: string;
  try {
    authority = new URL(origin).host;
  } catch {
    return false;
  }
  const host = headers.host ?? (headers[':authority'] as string | undefined);
  return host !== undefined && authority !== '' && authority.toLowerCase() === host.toLowerCase();
}
