import type { ClientFormat } from './types.js';

/**
 * An error body an OpenAI client parses (`{"error":{message,type,param,code}}`); for an Anthropic
 * client the same object also carries `"type":"error"`, which makes it Anthropic's shape too.
 */
export function aiErrorBody(
  format: ClientFormat,
  message: string,
  type: string,
  code: string | null,
): Record<string, unknown> {
  const error = { message, type, param: null, code };
  return format === 'anthropic' ? { type: 'error', error } : { error };
}

/** The message and type a provider's error body gives (OpenAI's, Anthropic's, Gemini's and AWS's shapes alike). */
export function providerErrorOf(raw: Buffer | null): { message: string; type: string | undefined } {
  if (raw === null || raw.length === 0) return { message: '', type: undefined };
  try {
    const body = JSON.parse(raw.toString('utf8')) as {
      error?: { message?: unknown; type?: unknown; status?: unknown };
      message?: unknown;
      Message?: unknown;
    };
    const e = body.error;
    // AWS (Bedrock): a top-level message, the error type in the x-amzn-ErrorType header.
    if (e === undefined) {
      const message = body.message ?? body.Message;
      return { message: typeof message === 'string' ? message : '', type: undefined };
    }
    return {
      message: typeof e?.message === 'string' ? e.message : '',
      type: typeof e?.type === 'string' ? e.type : typeof e?.status === 'string' ? e.status : undefined,
    };
  } catch {
    return { message: raw.subarray(0, 200).toString('utf8'), type: undefined };
  }
}

/** The error `type` each client format uses for an HTTP status. */
export function errorTypeFor(format: ClientFormat, status: number): string {
  if (format === 'anthropic') {
    if (status === 400) return 'invalid_request_error';
    if (status === 401) return 'authentication_error';
    if (status === 403) return 'permission_error';
    if (status === 404) return 'not_found_error';
    if (status === 413) return 'request_too_large';
    if (status === 429) return 'rate_limit_error';
    return 'api_error';
  }
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 401) return 'authentication_error';
  if (status < 500) return 'invalid_request_error';
  return 'api_error';
}
