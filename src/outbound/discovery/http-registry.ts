/** A registry answer that is not usable (status, body): a failure, the last targets are kept. */
export class RegistryError extends Error {
  override name = 'RegistryError';
}

/**
 * GET `url` as JSON within `timeoutMs` (and until `signal` aborts): the parsed body and the
 * response headers. A status other than 200 or a body that is not JSON is a RegistryError.
 */
export async function getJson(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<{ body: unknown; headers: Headers }> {
  const res = await fetch(url, {
    headers: { accept: 'application/json', ...headers },
    signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
    redirect: 'error',
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new RegistryError(`${redact(url)} answered ${res.status}: ${text.slice(0, 200)}`);
  try {
    return { body: JSON.parse(text) as unknown, headers: res.headers };
  } catch {
    throw new RegistryError(`${redact(url)} answered a body that is not JSON`);
  }
}

/** The URL without its query (tokens may travel there), for logs. */
function redact(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? url : url.slice(0, at);
}

/** A positive integer from a JSON value (numbers, numeric strings); undefined otherwise. */
export function portOf(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535 ? n : undefined;
}
