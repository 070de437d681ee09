import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { SecretError } from './manager.js';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Answers larger than this are refused (a secret document is a few KiB). */
const MAX_BODY = 1024 * 1024;

/** One request to a secret manager's HTTP API; a network error becomes a SecretError without detail of the payload. */
export function httpCall(
  url: URL,
  options: { method: string; headers: Record<string, string>; body?: string; ca?: Buffer; timeoutMs: number },
  label: string,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: options.method,
        headers:
          options.body === undefined
            ? options.headers
            : { ...options.headers, 'content-length': Buffer.byteLength(options.body) },
        ...(options.ca === undefined ? {} : { ca: options.ca }),
        timeout: options.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY) {
            req.destroy();
            reject(new SecretError(`${label}: answer larger than ${MAX_BODY} bytes`));
          } else chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', () => reject(new SecretError(`${label}: the answer was cut`)));
      },
    );
    req.on('timeout', () =>
      req.destroy(new SecretError(`${label}: no answer within ${options.timeoutMs} ms`)),
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(err instanceof SecretError ? err : new SecretError(`${label}: ${err.code ?? err.message}`)),
    );
    req.end(options.body);
  });
}

/** The JSON of an answer, or undefined. */
export function jsonOf(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
