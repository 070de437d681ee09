import type { Issue } from './types.js';

/** A non-2xx answer of the Admin API, with its `{error, details}` body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly details: Issue[],
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** 412: the resource changed since it was read (stale If-Match). */
  get conflict(): boolean {
    return this.status === 412;
  }
}

export interface Versioned<T> {
  value: T;
  /** The resource's ETag, sent back as If-Match on the next write. */
  etag: string | undefined;
}

/**
 * One same-origin call. The browser adds the admin's Basic credentials
 * itself (it prompts on the first 401 challenge), so none are handled here.
 */
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw await toError(res);
  return res;
}

async function toError(res: Response): Promise<ApiError> {
  const text = await res.text();
  let error = text || res.statusText;
  let details: Issue[] = [];
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown; details?: unknown };
    if (typeof parsed.error === 'string') error = parsed.error;
    if (typeof parsed.message === 'string') error = `${error}: ${parsed.message}`;
    if (Array.isArray(parsed.details)) details = parsed.details as Issue[];
  } catch {
    // Not JSON: keep the text.
  }
  return new ApiError(res.status, details, `${res.status} ${error}`);
}

export async function getJson<T>(path: string): Promise<T> {
  return (await (await call('GET', path)).json()) as T;
}

export async function getVersioned<T>(path: string): Promise<Versioned<T>> {
  const res = await call('GET', path);
  return { value: (await res.json()) as T, etag: res.headers.get('etag') ?? undefined };
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  return (await (await call('POST', path, body)).json()) as T;
}

/** PUT with If-Match when `etag` is given; answers the new ETag. */
export async function put(path: string, body: unknown, etag?: string): Promise<string | undefined> {
  const res = await call('PUT', path, body, etag === undefined ? {} : { 'if-match': etag });
  return res.headers.get('etag') ?? undefined;
}

export async function remove(path: string, etag?: string): Promise<void> {
  await call('DELETE', path, undefined, etag === undefined ? {} : { 'if-match': etag });
}

export type Kind = 'routes' | 'policies' | 'supernodes' | 'plugin-configs' | 'stores' | 'consumers';

export const itemPath = (kind: Kind, name: string): string => `/api/${kind}/${encodeURIComponent(name)}`;

/** A message for any failure, keeping the Admin API's own wording. */
export const describe = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export async function getText(path: string): Promise<string> {
  return (await call('GET', path)).text();
}
