import { METHODS as PUBLIC_METHODS } from 'node:http';
import { createRequire } from 'node:module';

/**
 * The llhttp binding node:http itself parses with, reached through Node's
 * `_http_common` module (no deprecation warning, unlike `process.binding`).
 * Using the very same parser, with the same strict flags, is what keeps the
 * lean front's answers to malformed or smuggling-shaped input identical to
 * node:http's (docs/benchmarks.md, "The lean HTTP/1.1 front"); the lean
 * upstream client reads responses with it too.
 *
 * The binding is private, so a Node release may move or change it. It is checked once, when
 * this module loads (`nativeHttpParserProblem`): its shape, then one request and one response
 * parsed end to end with the callbacks the lean paths rely on. When anything differs, this module
 * exports inert stand-ins (imports of the lean paths never throw), and the gateway serves
 * HTTP/1.1 through node:http and undici with one WARN (src/gateway.ts, docs/deployment.md).
 */

/** A parse failure as the binding reports it (`execute` returns it instead of throwing). */
export interface ParseError extends Error {
  code: string;
  bytesParsed: number;
}

export interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  /** Bytes consumed, or the error; with an upgrade, parsing stops right after the head. */
  execute(data: Buffer): number | ParseError;
  /** Signals end of input: an error when a message was cut short. */
  finish(): number | ParseError | undefined;
  close(): void;
  [callback: number]: unknown;
}

interface ParserBinding {
  new (): NativeParser;
  REQUEST: number;
  RESPONSE: number;
  kOnMessageBegin: number;
  kOnHeaders: number;
  kOnHeadersComplete: number;
  kOnBody: number;
  kOnMessageComplete: number;
  kLenientNone: number;
}

interface HttpCommon {
  HTTPParser: ParserBinding;
  methods: readonly string[];
  _checkIsHttpToken(this: void, value: string): boolean;
  _checkInvalidHeaderChar(this: void, value: string): boolean;
}

const CONSTANTS = [
  'REQUEST',
  'RESPONSE',
  'kOnMessageBegin',
  'kOnHeaders',
  'kOnHeadersComplete',
  'kOnBody',
  'kOnMessageComplete',
  'kLenientNone',
] as const;
const METHODS_USED = ['initialize', 'execute', 'finish', 'close'] as const;

/**
 * `SWITCHYARD_STUB_INTERNALS=http-parser` (tests): the probe is shown a binding whose parser has
 * no `execute`, as a Node release that renamed it would present, to exercise the fallback.
 */
function stubbed(common: HttpCommon): HttpCommon {
  const stub = function HTTPParser() {} as unknown as ParserBinding;
  for (const name of CONSTANTS) (stub as unknown as Record<string, number>)[name] = common.HTTPParser[name];
  for (const name of METHODS_USED)
    if (name !== 'execute')
      (stub.prototype as Record<string, unknown>)[name] = (
        common.HTTPParser.prototype as Record<string, unknown>
      )[name];
  return { ...common, HTTPParser: stub };
}

function loadCommon(): HttpCommon | string {
  let common: HttpCommon;
  try {
    common = createRequire(import.meta.url)('_http_common') as HttpCommon;
  } catch (err) {
    return `require('_http_common') failed: ${(err as Error).message}`;
  }
  const stubs = (process.env['SWITCHYARD_STUB_INTERNALS'] ?? '').split(',');
  return stubs.includes('http-parser') ? stubbed(common) : common;
}

/** What differs from the binding the lean paths were written against, or undefined when nothing does. */
function probe(common: HttpCommon): string | undefined {
  const P = common.HTTPParser as ParserBinding | undefined;
  if (typeof P !== 'function') return 'HTTPParser is not a constructor';
  for (const name of CONSTANTS) if (!Number.isInteger(P[name])) return `HTTPParser.${name} is not a number`;
  const proto = P.prototype as Record<string, unknown>;
  for (const name of METHODS_USED)
    if (typeof proto[name] !== 'function') return `HTTPParser.prototype.${name} is not a function`;
  if (!Array.isArray(common.methods) || !common.methods.every((m) => typeof m === 'string'))
    return 'methods is not a list of names';
  if (typeof common._checkIsHttpToken !== 'function' || typeof common._checkInvalidHeaderChar !== 'function')
    return 'the header validators are missing';
  if (common._checkIsHttpToken('X-Probe') !== true || common._checkIsHttpToken('a b') !== false)
    return '_checkIsHttpToken answers differently';
  if (common._checkInvalidHeaderChar('ok') !== false || common._checkInvalidHeaderChar('a\nb') !== true)
    return '_checkInvalidHeaderChar answers differently';
  try {
    const request = parseOnce(P, P.REQUEST, 'POST /probe HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok');
    const [major, minor, headers, method, url] = request.head;
    if (major !== 1 || minor !== 1 || common.methods[method as number] !== 'POST' || url !== '/probe')
      return 'a request head is reported with other arguments';
    if (JSON.stringify(headers) !== '["Host","h","Content-Length","2"]')
      return 'request headers are reported differently';
    if (request.body !== 'ok' || !request.complete) return 'a request body is reported differently';
    const response = parseOnce(P, P.RESPONSE, 'HTTP/1.1 201 Made\r\nContent-Length: 0\r\n\r\n');
    const [, , , , , status, text, upgrade, keepAlive] = response.head;
    if (status !== 201 || text !== 'Made' || upgrade !== false || keepAlive !== true || !response.complete)
      return 'a response head is reported with other arguments';
  } catch (err) {
    return `parsing failed: ${(err as Error).message}`;
  }
  return undefined;
}

function parseOnce(
  P: ParserBinding,
  type: number,
  text: string,
): { head: unknown[]; body: string; complete: boolean } {
  const seen = { head: [] as unknown[], body: '', complete: false };
  const parser = new P();
  parser.initialize(type, {}, 0, P.kLenientNone);
  parser[P.kOnMessageBegin] = () => {};
  parser[P.kOnHeaders] = () => {};
  parser[P.kOnHeadersComplete] = (...args: unknown[]) => {
    seen.head = args;
    return 0;
  };
  parser[P.kOnBody] = (chunk: Buffer) => {
    seen.body += chunk.toString('latin1');
  };
  parser[P.kOnMessageComplete] = () => {
    seen.complete = true;
  };
  try {
    const parsed = parser.execute(Buffer.from(text, 'latin1'));
    if (typeof parsed !== 'number') throw parsed;
  } finally {
    parser.close();
  }
  return seen;
}

/** A parser that refuses everything: what the lean paths' module-level code meets after a failed probe. */
class InertParser {
  initialize(): void {}
  execute(): ParseError {
    return Object.assign(new Error('the native HTTP parser is not in use'), {
      code: 'HPE_INTERNAL',
      bytesParsed: 0,
    });
  }
  finish(): undefined {
    return undefined;
  }
  close(): void {}
  [callback: number]: unknown;
}
const INERT = Object.assign(
  InertParser,
  Object.fromEntries(CONSTANTS.map((name, i) => [name, i])),
) as unknown as ParserBinding;
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

const loaded = loadCommon();
/** Why the lean HTTP/1.1 paths cannot use this Node's parser binding, or undefined when they can. */
export const nativeHttpParserProblem: string | undefined =
  typeof loaded === 'string' ? loaded : probe(loaded);
const common: HttpCommon =
  typeof loaded !== 'string' && nativeHttpParserProblem === undefined
    ? loaded
    : {
        HTTPParser: INERT,
        methods: PUBLIC_METHODS,
        _checkIsHttpToken: (value) => TOKEN.test(value),
        _checkInvalidHeaderChar: (value) => INVALID_HEADER_CHAR.test(value),
      };

export const HTTPParser = common.HTTPParser;
/** Method names by the index the parser reports. */
export const METHODS = common.methods;
/** node:http's own header validators, so both fronts refuse exactly the same response headers. */
export const isHttpToken = common._checkIsHttpToken;
export const hasInvalidHeaderChar = common._checkInvalidHeaderChar;

let reported = false;

/**
 * Logs, once per process, that the lean HTTP/1.1 paths are off because the binding failed its
 * probe; the data-plane listener calls it at start. Returns true when they are off.
 */
export function leanHttp1Disabled(logger: { warn(fields: object, message: string): void }): boolean {
  if (nativeHttpParserProblem === undefined) return false;
  if (!reported) {
    reported = true;
    logger.warn(
      { node: process.version, problem: nativeHttpParserProblem },
      "node's HTTP parser binding is not the one the lean HTTP/1.1 server and client were written for: " +
        'HTTP/1.1 is served through node:http and sent upstream through undici',
    );
  }
  return true;
}
