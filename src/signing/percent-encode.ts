/**
 * RFC 3986 percent-encoding, per UTF-8 byte: only the unreserved set
 * (`A-Z a-z 0-9 - . _ ~`) stays literal, every other byte becomes `%XX`
 * (upper-case hex). This is the encoding version-4 request signing expects,
 * and the one that keeps a value inside a single path segment.
 */
export function percentEncode(value: string): string {
  // Fast path: nothing to encode (the usual case for names and plain values).
  if (UNRESERVED_ONLY.test(value)) return value;
  // Buffer.from turns a lone surrogate into U+FFFD instead of throwing, as encodeURIComponent would.
  const bytes = Buffer.from(value, 'utf8');
  let out = '';
  for (const byte of bytes) out += ENCODED[byte]!;
  return out;
}

/** Percent-encodes each `/`-separated segment of `path`, keeping the slashes. */
export function percentEncodePath(path: string): string {
  if (UNRESERVED_PATH.test(path)) return path;
  return path.split('/').map(percentEncode).join('/');
}

const UNRESERVED_ONLY = /^[A-Za-z0-9\-._~]*$/;
const UNRESERVED_PATH = /^[A-Za-z0-9\-._~/]*$/;

/** Byte → its encoded form, built once. */
const ENCODED: readonly string[] = Array.from({ length: 256 }, (_, byte) => {
  const char = String.fromCharCode(byte);
  return byte < 0x80 && UNRESERVED_ONLY.test(char)
    ? char
    : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
});
