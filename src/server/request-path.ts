/**
 * One path per request: the request target is normalised once, before routing,
 * and the normalised form is what every node and the upstream see. Without it a
 * route and an upstream can disagree on what `/public/../admin/x` names.
 */

/** Why a request target was refused (the 400 message). */
export class PathRejected extends Error {}

const SLASH = 0x2f;
const DOT = 0x2e;
const PERCENT = 0x25;
const BACKSLASH = 0x5c;

/**
 * True when the path needs the slow normaliser: it has a percent escape, a
 * backslash, an empty segment (`//`) or a segment starting with a dot. Most
 * paths have none and are returned as they came, without allocating.
 */
function needsWork(path: string, end: number): boolean {
  for (let i = 0; i < end; i++) {
    const c = path.charCodeAt(i);
    if (c === PERCENT || c === BACKSLASH) return true;
    if (c === SLASH) {
      const next = path.charCodeAt(i + 1);
      if (next === SLASH || next === DOT) return true;
    }
  }
  return false;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** RFC 3986 §2.3 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2d ||
    c === DOT ||
    c === 0x5f ||
    c === 0x7e
  );
}

/**
 * RFC 3986 §6.2.2.1–2 for one segment: escapes of unreserved characters are
 * decoded (`%2e` → `.`, `%61` → `a`), the others get uppercase hex (`%2f` →
 * `%2F`). A `%` not followed by two hex digits is left as it is.
 */
function normaliseEscapes(segment: string): string {
  if (!segment.includes('%')) return segment;
  let out = '';
  let from = 0;
  for (let i = segment.indexOf('%'); i !== -1; i = segment.indexOf('%', i + 1)) {
    const hi = hexValue(segment.charCodeAt(i + 1));
    const lo = hexValue(segment.charCodeAt(i + 2));
    if (hi < 0 || lo < 0) continue;
    const byte = hi * 16 + lo;
    out += segment.slice(from, i);
    out += isUnreserved(byte) ? String.fromCharCode(byte) : segment.slice(i, i + 3).toUpperCase();
    from = i + 3;
    i += 2;
  }
  return out + segment.slice(from);
}

/**
 * A segment that hides a dot-segment behind an encoded or backslash separator
 * (`..%2Fadmin`, `..\admin`) or a path parameter (`..;x`, which Servlet
 * containers read as `..`): an upstream that decodes `%2F`, treats `\` as `/` or
 * strips `;` parameters would climb where the route never looked.
 */
function hidesDotSegment(segment: string): boolean {
  if (!segment.includes('.')) return false;
  for (const part of segment.replace(/%2F|%5C/g, '/').split(/[/\\]/)) {
    const semicolon = part.search(/;|%3B/);
    const name = semicolon === -1 ? part : part.slice(0, semicolon);
    if (name === '.' || name === '..') return true;
  }
  return false;
}

/**
 * Normalises the path of an origin-form request target (`/p?q`); the query is
 * kept byte for byte. Percent escapes are normalised (see `normaliseEscapes`),
 * runs of `/` are merged into one, and dot-segments are removed as in RFC 3986
 * §5.2.4. `%2F` stays encoded and is not a separator. Throws {@link PathRejected}
 * for a path that climbs above the root or hides a dot-segment in a segment.
 *
 * @example
 * normaliseTarget('/cap/%2e%2e/admin?x=..'); // '/admin?x=..'
 * normaliseTarget('/a//b/./c/');            // '/a/b/c/'
 * normaliseTarget('/a/../../etc');          // throws PathRejected
 */
export function normaliseTarget(target: string): string {
  const q = target.indexOf('?');
  if (!needsWork(target, q === -1 ? target.length : q)) return target;
  const path = q === -1 ? target : target.slice(0, q);
  const input = path.slice(1).split('/');
  const out: string[] = [];
  const last = input.length - 1;
  for (let i = 0; i <= last; i++) {
    const segment = normaliseEscapes(input[i] ?? '');
    // A dot-segment, or an empty one (`//`), that ends the path leaves a trailing slash (`/a/b/..` → `/a/`).
    const trailing = i === last;
    if (segment === '..') {
      if (out.length === 0) throw new PathRejected('request path climbs above the root');
      out.pop();
      if (trailing) out.push('');
    } else if (segment === '.' || segment === '') {
      if (trailing) out.push('');
    } else if (hidesDotSegment(segment)) {
      throw new PathRejected('request path hides a dot-segment behind %2F, a backslash or a ;parameter');
    } else {
      out.push(segment);
    }
  }
  const normalised = '/' + out.join('/');
  return q === -1 ? normalised : normalised + target.slice(q);
}
