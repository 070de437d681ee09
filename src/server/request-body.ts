import type { ServerRequest } from './data-plane.js';
import { LeanRequest } from './lean/lean-request.js';

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/**
 * True when the request has a body to read: in HTTP/1.1 when it announces one
 * (RFC 9112 §6.3); in HTTP/2 also when its HEADERS frame did not end the
 * stream, since a DATA frame needs no `content-length` (RFC 9113 §8.1).
 */
export function hasBody(req: ServerRequest): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length !== '0';
  if ('stream' in req) return !req.stream.endAfterHeaders;
  return req.headers['transfer-encoding'] !== undefined;
}

/**
 * Buffers the whole request body (docs/routing.md#request-bodies: uploads are not streamed), rejecting
 * with BodyTooLarge as soon as `limit` is passed (or announced).
 */
export function readBody(req: ServerRequest, limit: number): Promise<Buffer> {
  const announced = Number(req.headers['content-length'] ?? NaN);
  if (announced > limit) return Promise.reject(new BodyTooLarge(limit));
  if (req instanceof LeanRequest) return req.readBody(limit, () => new BodyTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(new BodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
