import { createRequire } from 'node:module';

/**
 * The llhttp binding node:http itself parses with, reached through Node's
 * `_http_common` module (no deprecation warning, unlike `process.binding`).
 * Using the very same parser, with the same strict flags, is what keeps the
 * lean front's answers to malformed or smuggling-shaped input identical to
 * node:http's (docs/benchmarks.md, "The lean HTTP/1.1 front"); the lean
 * upstream client reads responses with it too.
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

const common = createRequire(import.meta.url)('_http_common') as HttpCommon;

export const HTTPParser = common.HTTPParser;
/** Method names by the index the parser reports. */
export const METHODS = common.methods;
/** node:http's own header validators, so both fronts refuse exactly the same response headers. */
export const isHttpToken = common._checkIsHttpToken;
export const hasInvalidHeaderChar = common._checkInvalidHeaderChar;
