import type { Reply } from '../server/respond.js';

/** RFC 8555 §8.3: where an HTTP-01 validator fetches the key authorization. */
const PREFIX = '/.well-known/acme-challenge/';

/** The key authorizations of HTTP-01 challenges in flight, by token. */
export interface Http01Tokens {
  http01KeyAuthorization(token: string): string | undefined;
}

/**
 * Answers an HTTP-01 validation before routing (docs/acme.md#http-01): a GET
 * or HEAD of `/.well-known/acme-challenge/<token>` for a token of an order in
 * flight gets its key authorization as text/plain. Returns false for every
 * other request (including unknown tokens), which then routes as usual.
 */
export function answerHttp01(
  tokens: Http01Tokens | undefined,
  req: { readonly url?: string | undefined; readonly method?: string | undefined },
  reply: Reply,
): boolean {
  const url = req.url;
  if (tokens === undefined || url === undefined || !url.startsWith(PREFIX)) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const end = url.indexOf('?');
  const token = url.slice(PREFIX.length, end === -1 ? undefined : end);
  const answer = tokens.http01KeyAuthorization(token);
  if (answer === undefined) return false;
  const body = Buffer.from(answer);
  reply.writeHead(200, {
    'content-type': 'text/plain',
    'content-length': body.length,
    'cache-control': 'no-store',
  });
  if (req.method === 'HEAD') reply.end();
  else reply.end(body);
  return true;
}
