/**
 * The Admin API as the config-as-code commands see it (`dump`, `diff`, `apply`;
 * docs/config-as-code.md): URL and Basic credentials from `--admin-url`, `--user`, `--password`
 * or SWITCHYARD_ADMIN_URL, SWITCHYARD_ADMIN_USER, SWITCHYARD_ADMIN_PASSWORD.
 */

/** A failure the command reports on stderr and exits 2 for. */
export class CommandError extends Error {
  override name = 'CommandError';
}

export interface AdminTarget {
  url: string;
  authorization: string | undefined;
}

export const ADMIN_OPTIONS = {
  'admin-url': { type: 'string' },
  user: { type: 'string' },
  password: { type: 'string' },
} as const;

export function adminTarget(values: { 'admin-url'?: string; user?: string; password?: string }): AdminTarget {
  const url = values['admin-url'] ?? process.env['SWITCHYARD_ADMIN_URL'];
  if (url === undefined || url === '')
    throw new CommandError('the Admin API URL is needed: --admin-url or SWITCHYARD_ADMIN_URL');
  const user = values.user ?? process.env['SWITCHYARD_ADMIN_USER'];
  const password = values.password ?? process.env['SWITCHYARD_ADMIN_PASSWORD'];
  const authorization =
    user === undefined ? undefined : `Basic ${Buffer.from(`${user}:${password ?? ''}`).toString('base64')}`;
  return { url: url.replace(/\/+$/, ''), authorization };
}

export interface AdminAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** One Admin API request; an unreachable gateway or a 401/403 is a CommandError. */
export async function adminRequest(
  target: AdminTarget,
  method: string,
  path: string,
  options: { json?: unknown; headers?: Record<string, string> } = {},
): Promise<AdminAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  if (target.authorization !== undefined) headers['authorization'] = target.authorization;
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`${target.url}${path}`, {
      method,
      headers,
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
    });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    throw new CommandError(`cannot reach the Admin API at ${target.url}: ${cause}`);
  }
  const text = await res.text();
  if (res.status === 401)
    throw new CommandError(`${method} ${path}: 401 unauthorized (check --user and --password)`);
  if (res.status === 403) throw new CommandError(`${method} ${path}: 403 ${errorText(text)}`);
  return { status: res.status, headers: res.headers, text };
}

/** The `error` (and `message`) of a JSON error answer, or the text. */
export function errorText(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    const parts = [body.error, body.message].filter((p) => typeof p === 'string');
    if (parts.length > 0) return parts.join(': ');
  } catch {
    // not JSON
  }
  return text.trim();
}
