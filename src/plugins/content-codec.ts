import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';

/** A Content-Encoding the body plugins cannot undo. */
export class UnsupportedEncodingError extends Error {
  constructor(readonly encoding: string) {
    super(`unsupported content-encoding '${encoding}'`);
    this.name = 'UnsupportedEncodingError';
  }
}

/**
 * Undoes a response's Content-Encoding (gzip, deflate, br; identity or none
 * leaves it alone). Throws UnsupportedEncodingError for other codings and the
 * zlib error for corrupt data.
 */
export function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  const codings = (encoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let out = body;
  // Codings are listed in the order they were applied: undo them from the last.
  for (const coding of codings.reverse()) {
    switch (coding) {
      case 'gzip':
      case 'x-gzip':
        out = gunzipSync(out);
        break;
      case 'deflate':
        // Servers send both zlib-wrapped and raw deflate under this name.
        out = out.length > 0 && (out[0]! & 0x0f) === 8 ? inflateSync(out) : inflateRawSync(out);
        break;
      case 'br':
        out = brotliDecompressSync(out);
        break;
      default:
        throw new UnsupportedEncodingError(coding);
    }
  }
  return out;
}
