import type { IncomingMessage } from 'node:http';
import { adminErrorReply, type Reply } from './http.js';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export const isWrite = (method: string): boolean => WRITES.has(method);

const forbidden = (message: string): Reply => adminErrorReply('forbidden', { message });

function normalizedOrigin(text: string): string | undefined {
  try {
    const url = new URL(text);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

/**
 * M2, first half: a browser sends `Origin` (and `Sec-Fetch-Site`) with every
 * cross-origin write, and adds the admin's cached Basic credentials to it. A
 * write whose Origin is neither the listener's own (scheme + Host) nor listed
 * in `admin.allowed_origins` is refused before its credentials are looked
 * at, so a forged request neither runs nor counts as a failed login.
 * Requests without Origin (curl, the CLI, scripts) pass.
 */
export function crossOriginGuard(
  scheme: 'http' | 'https',
  allowedOrigins: readonly string[],
): (req: IncomingMessage, method: string) => Reply | undefined {
  const allowed = new Set(allowedOrigins.map((o) => normalizedOrigin(o) ?? o));
  return (req, method) => {
    if (!isWrite(method)) return undefined;
    if (req.headers['sec-fetch-site'] === 'cross-site') {
      return forbidden('cross-site writes to the Admin API are refused');
    }
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    const from = normalizedOrigin(origin);
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    const own = host === undefined ? undefined : normalizedOrigin(`${scheme}://${host}`);
    if (from !== undefined && (from === own || allowed.has(from))) return undefined;
    return forbidden(`writes from origin ${JSON.stringify(origin)} are refused (see admin.allowed_origins)`);
  };
}

const isJson = (contentType: string): boolean => {
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return essence === 'application/json' || (essence.startsWith('application/') && essence.endsWith('+json'));
};

/**
 * M2, second half: a write with a body must say `Content-Type:
 * application/json`. HTML forms can only send urlencoded, multipart or
 * text/plain bodies without a CORS preflight, so this closes the "simple
 * request" route even for a browser that sent no Origin. A write without a
 * body (DELETE, a reload) needs no type.
 */
export function contentTypeGuard(req: IncomingMessage, method: string): Reply | undefined {
  if (!isWrite(method)) return undefined;
  const type = req.headers['content-type'];
  if (type !== undefined ? isJson(type) : !hasBody(req)) return undefined;
  return adminErrorReply(
    'unsupported_media_type',
    { message: 'Admin API writes take Content-Type: application/json' },
    // RFC 9110 §15.5.16: Accept names the media types that would have been taken.
    { accept: 'application/json' },
  );
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length.trim() !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}
