/**
 * The bad-framing answers of the security review's `redteam/badorigin.mjs` (review 3, "What held",
 * and F-2, F-14), as data: what a raw `net` origin writes when it is asked `/bad/<mode>`. Every bad
 * answer carries `X-Bad: 1` and every smuggled one `X-Poison`, `Location`, `Set-Cookie` or
 * `X-Injected`, so a follow-up request that gets any of them got bytes of someone else's answer.
 */

/** One thing the origin does: write bytes, pause (so the next write is a read of its own), end, reset. */
export type Step =
  | string
  | { gapMs: number }
  | { end: true }
  | { destroy: true }
  /** Held back until the test asks for it, after the answer was delivered: bytes to an idle connection. */
  | { late: string };

export interface Mode {
  name: string;
  steps: Step[];
  /** The request method the client uses (HEAD modes); GET otherwise, POST for `bodyAfterAnswer`. */
  method?: 'HEAD' | 'POST';
  /** The origin answers after the request head, before the client sent the request body. */
  bodyAfterAnswer?: boolean;
  /**
   * Bytes past a complete answer arrive in a later read: the gateway must close that connection,
   * and the follow-up request waits until it has (so no follow-up races the late bytes).
   */
  mustClose?: boolean;
}

/** A complete response the review calls POISON. */
export const POISON = 'HTTP/1.1 200 OK\r\nContent-Length: 6\r\nX-Poison: 1\r\n\r\nPOISON';
const SMUGGLED_302 =
  'HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\nSet-Cookie: session=attacker\r\nContent-Length: 0\r\n\r\n';
const OK = 'HTTP/1.1 200 OK\r\nX-Bad: 1\r\n';
const CL5 = `${OK}Content-Length: 5\r\n\r\nhello`;
const CHUNKED = `${OK}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`;
const GAP = { gapMs: 30 };
const END = { end: true } as const;
const DESTROY = { destroy: true } as const;
const BIG = 60_000;

/** Header names whose presence in a follow-up answer means bytes of a bad answer reached it. */
export const SMUGGLED_HEADERS = ['x-bad', 'x-poison', 'location', 'set-cookie', 'x-injected', 'x-swallow'];

const m = (name: string, steps: Step[], extra: Partial<Mode> = {}): Mode => ({ name, steps, ...extra });

export const MODES: readonly Mode[] = [
  // Content-Length values.
  m('cl-dup-same', [`${OK}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello`]),
  m('cl-dup-diff', [`${OK}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`]),
  m('cl-comma-same', [`${OK}Content-Length: 5, 5\r\n\r\nhello`]),
  m('cl-comma-diff', [`${OK}Content-Length: 5, 6\r\n\r\nhello!`]),
  m('cl-plus', [`${OK}Content-Length: +5\r\n\r\nhello`]),
  m('cl-minus', [`${OK}Content-Length: -5\r\n\r\nhello`]),
  m('cl-hex', [`${OK}Content-Length: 0x5\r\n\r\nhello`]),
  m('cl-huge', [`${OK}Content-Length: 99999999999999999999999\r\n\r\nhello`]),
  m('cl-space-inside', [`${OK}Content-Length: 5 5\r\n\r\nhello`]),
  m('cl-empty', [`${OK}Content-Length: \r\n\r\nhello`]),
  m('cl-space-before-colon', [`${OK}Content-Length : 5\r\n\r\nhello`]),
  m('cl-shorter-than-body', [`${OK}Content-Length: 3\r\n\r\nhello`]),
  m('cl-zero-then-body', [`${OK}Content-Length: 0\r\n\r\nhello`]),
  m('cl-longer-then-close', [`${OK}Content-Length: 10\r\n\r\nhello`, END]),
  m('cl-longer-then-hang', [`${OK}Content-Length: 10\r\n\r\nhello`]),
  // Bytes after a complete answer: same read, later read, while idle.
  m('cl-extra-same-read', [CL5 + POISON]),
  m('cl-extra-garbage', [`${CL5}garbage`]),
  m('cl-extra-crlf', [`${CL5}\r\n`]),
  m('cl-extra-next-read', [CL5, GAP, POISON], { mustClose: true }),
  m('cl-extra-idle', [CL5, { late: POISON }]),
  m('cl-extra-idle-partial-head', [
    CL5,
    { late: 'HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\n' },
  ]),
  m('cl-big-extra', [
    `${OK}Content-Length: ${BIG}\r\n\r\n${'a'.repeat(BIG / 2)}`,
    GAP,
    'b'.repeat(BIG / 2) + POISON,
  ]),
  m('chunked-extra', [CHUNKED + POISON]),
  m('chunked-extra-setcookie', [CHUNKED + SMUGGLED_302]),
  m('chunked-extra-next-read', [CHUNKED, GAP, POISON], { mustClose: true }),
  m('chunked-extra-idle', [CHUNKED, { late: SMUGGLED_302 }]),
  m('chunked-big-extra', [
    `${OK}Transfer-Encoding: chunked\r\n\r\n${BIG.toString(16)}\r\n${'a'.repeat(BIG / 2)}`,
    GAP,
    `${'b'.repeat(BIG / 2)}\r\n0\r\n\r\n${POISON}`,
  ]),
  m('cl-headsplit-extra', [`${OK}Content-Len`, GAP, `gth: 5\r\n\r\nhello${POISON}`]),
  m('cl-headsplit-extra-idle', [`${OK}Content-Len`, GAP, 'gth: 5\r\n\r\nhello', { late: POISON }]),
  m('poison-partial-head', [
    CHUNKED +
      'HTTP/1.1 302 Found\r\nLocation: https://evil.example/\r\nSet-Cookie: sid=attacker; Path=/\r\nX-Swallow: ',
  ]),
  m('cl-big-headsplit-extra', [
    `${OK}Content-Len`,
    GAP,
    `gth: ${BIG}\r\n\r\n${'a'.repeat(BIG / 2)}`,
    GAP,
    `${'b'.repeat(BIG / 2)}HTTP/1.1 200 OK\r\nContent-Length: 58\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 6\r\nX-Injected: 1\r\n\r\nPOISON`,
  ]),
  // Answers without a body, followed by bytes.
  m('204-then-bytes', [`HTTP/1.1 204 No Content\r\nX-Bad: 1\r\n\r\nhello`]),
  m('204-cl-body', [`HTTP/1.1 204 No Content\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello`]),
  m('204-chunked-body', [
    `HTTP/1.1 204 No Content\r\nX-Bad: 1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
  ]),
  m('204-headsplit-poison', ['HTTP/1.1 204 No Content\r\nX-B', GAP, `ad: 1\r\n\r\n${POISON}`]),
  m('204-idle', ['HTTP/1.1 204 No Content\r\nX-Bad: 1\r\n\r\n', { late: POISON }]),
  m('304-then-bytes', [`HTTP/1.1 304 Not Modified\r\nX-Bad: 1\r\n\r\nhello`]),
  m('304-cl-body', [`HTTP/1.1 304 Not Modified\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\n${POISON}`]),
  m('head-with-body', [CL5], { method: 'HEAD' }),
  m('head-with-poison', [CL5.slice(0, -5) + POISON], { method: 'HEAD' }),
  m('head-headsplit-poison', [`${OK}Content-Len`, GAP, `gth: 5\r\n\r\n${POISON}`], { method: 'HEAD' }),
  // Informational answers.
  m('100-then-200', [`HTTP/1.1 100 Continue\r\n\r\n${CL5}`]),
  m('102-then-200', [`HTTP/1.1 102 Processing\r\n\r\n${CL5}`]),
  m('103-then-200', [`HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n${CL5}`]),
  m('100-train-2000', ['HTTP/1.1 100 Continue\r\n\r\n'.repeat(2000) + CL5]),
  m('100-then-close', ['HTTP/1.1 100 Continue\r\n\r\n', END]),
  m('101-switching', [
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Bad: 1\r\n\r\n',
  ]),
  m('101-no-upgrade', ['HTTP/1.1 101 Switching Protocols\r\nX-Bad: 1\r\n\r\nhello']),
  // Transfer codings.
  m('te-and-cl', [`${OK}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n`]),
  m('te-chunked-gzip', [`${OK}Transfer-Encoding: chunked, gzip\r\n\r\nhello`, END]),
  m('te-gzip-chunked', [`${OK}Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`]),
  m('te-gzip-only-close', [`${OK}Transfer-Encoding: gzip\r\n\r\nhello`, END]),
  m('te-duplicate', [
    `${OK}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
  ]),
  m('chunk-size-not-hex', [`${OK}Transfer-Encoding: chunked\r\n\r\nZZZ\r\nhello\r\n0\r\n\r\n`]),
  m('chunk-size-overflow', [
    `${OK}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nhello\r\n0\r\n\r\n`,
  ]),
  m('chunk-extension', [`${OK}Transfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\n\r\n`]),
  m('chunk-trailer', [`${OK}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n`]),
  m('chunked-no-last-chunk', [`${OK}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`, END]),
  // Line endings and header bytes.
  m('bare-lf', ['HTTP/1.1 200 OK\nX-Bad: 1\nContent-Length: 5\n\nhello']),
  m('bare-cr-in-value', [`${OK}X-A: a\rb\r\nContent-Length: 5\r\n\r\nhello`]),
  m('obs-fold', [`${OK}X-A: a\r\n b\r\nContent-Length: 5\r\n\r\nhello`]),
  m('nul-in-value', [`${OK}X-A: a\u0000b\r\nContent-Length: 5\r\n\r\nhello`]),
  m('space-in-name', [`${OK}X A: b\r\nContent-Length: 5\r\n\r\nhello`]),
  m('head-20k', [`${OK}X-Big: ${'b'.repeat(20 * 1024)}\r\nContent-Length: 5\r\n\r\nhello`]),
  m('head-60-fields', [`${OK}${'X-F: v\r\n'.repeat(60)}Content-Length: 5\r\n\r\nhello`]),
  // Status lines.
  m('no-reason-phrase', ['HTTP/1.1 200\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello']),
  m('http10-close-delimited', ['HTTP/1.0 200 OK\r\nX-Bad: 1\r\n\r\nhello', END]),
  m('status-099', ['HTTP/1.1 099 Weird\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello']),
  m('status-000', ['HTTP/1.1 000 Zero\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello']),
  m('status-1000', ['HTTP/1.1 1000 Big\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello']),
  m('status-999', ['HTTP/1.1 999 Odd\r\nX-Bad: 1\r\nContent-Length: 5\r\n\r\nhello']),
  m('status-garbage', ['FOO/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello']),
  // Timing and connection faults.
  m('answer-before-request-body', [CL5], { method: 'POST', bodyAfterAnswer: true }),
  m('reset', [DESTROY]),
  m('reset-after-head', [`${OK}Content-Length: 5\r\n\r\n`, DESTROY]),
  m('close-without-answer', [END]),
  m('hang', []),
];
