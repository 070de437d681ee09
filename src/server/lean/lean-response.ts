import { EventEmitter } from 'node:events';
import { STATUS_CODES } from 'node:http';
import { hasInvalidHeaderChar, isHttpToken } from '../../runtime/native-http-parser.js';
import type { LeanRequest } from './lean-request.js';

/** What a response needs from its connection. */
export interface ResponseSink {
  /** The socket writes; false means back-pressure ('drain' follows on the response). */
  write(data: Buffer | string, latin1?: boolean): boolean;
  cork(): void;
  uncork(): void;
  /** The connection may stay open for another request (not draining, not told to close). */
  readonly reusable: boolean;
  /** `Keep-Alive: timeout=N` seconds. */
  readonly keepAliveSeconds: number;
  /** The cached `Date` header value. */
  readonly date: string;
  responseDone(res: LeanResponse, keepAlive: boolean): void;
  destroy(): void;
}

export type LeanHeaders = Record<string, string | string[] | number | undefined>;

/**
 * Head and body leave in one buffer (one write, one syscall) while that buffer fits Node's shared
 * allocation pool (under 4 KiB: `Buffer.allocUnsafe` then slices the pool instead of allocating an
 * ArrayBuffer); beyond it, a corked writev of the two, which copies nothing.
 */
const COALESCE_LIMIT = (Buffer.poolSize >>> 1) - 1;
const LAST_CHUNK = '0\r\n\r\n';

/**
 * The response side of the lean HTTP/1.1 front: the subset of ServerResponse
 * the data plane uses (writeHead, write, end, destroy; 'drain' and 'close'),
 * framed the way node:http frames it (Content-Length when known, else chunked
 * on HTTP/1.1 and close-delimited on HTTP/1.0; no body for HEAD, 1xx, 204, 304;
 * Date, Connection and Keep-Alive added), writing straight to the socket.
 */
export class LeanResponse extends EventEmitter {
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  writableFinished = false;
  readonly #sink: ResponseSink;
  readonly #req: LeanRequest;
  /** The serialised head, until the first write sends it along. */
  #head: string | null = null;
  #chunked = false;
  #hasBody = true;
  #keepAlive = false;
  /** The last chunk of a chunked body, with the trailer fields addTrailers() gave. */
  #lastChunk = LAST_CHUNK;

  constructor(sink: ResponseSink, req: LeanRequest) {
    super();
    this.#sink = sink;
    this.#req = req;
  }

  /** Throws, as node:http does, on a status out of range or a header name/value that cannot go on the wire. */
  writeHead(status: number, headers?: LeanHeaders): this {
    if (this.headersSent) throw new Error('Cannot write headers after they are sent to the client');
    if (!Number.isInteger(status) || status < 100 || status > 999)
      throw new RangeError(`Invalid status code: ${status}`);
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
    let hasLength = false;
    let hasDate = false;
    let connection: string | undefined;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      if (!isHttpToken(name)) throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
      if (typeof value === 'object') for (const item of value) head += headerLine(name, item);
      else head += headerLine(name, typeof value === 'string' ? value : String(value));
      switch (name.length) {
        case 14:
          hasLength ||= name.toLowerCase() === 'content-length';
          break;
        case 4:
          hasDate ||= name.toLowerCase() === 'date';
          break;
        case 10:
          if (name.toLowerCase() === 'connection') connection = String(value);
          break;
      }
    }
    const req = this.#req;
    this.#hasBody = req.method !== 'HEAD' && status !== 204 && status !== 304 && status >= 200;
    const http11 = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1;
    let keepAlive = req.keepAlive && this.#sink.reusable;
    if (!hasDate) head += `Date: ${this.#sink.date}\r\n`;
    if (connection !== undefined) keepAlive = !/(?:^|\W)close(?:$|\W)/i.test(connection);
    else if (keepAlive && (hasLength || http11))
      head += `Connection: keep-alive\r\nKeep-Alive: timeout=${this.#sink.keepAliveSeconds}\r\n`;
    else {
      keepAlive = false;
      head += 'Connection: close\r\n';
    }
    if (!hasLength && this.#hasBody) {
      if (http11) {
        head += 'Transfer-Encoding: chunked\r\n';
        this.#chunked = true;
      } else keepAlive = false; // HTTP/1.0 without a length: the close ends the body
    }
    this.#head = head + '\r\n';
    this.#keepAlive = keepAlive;
    this.statusCode = status;
    this.headersSent = true;
    return this;
  }

  write(chunk: Buffer): boolean {
    if (this.writableFinished) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (!this.#hasBody || chunk.length === 0) return true;
    return this.#send(chunk, false);
  }

  end(chunk?: Buffer | string): void {
    if (this.writableFinished) return;
    const body = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (!this.headersSent) this.writeHead(this.statusCode, { 'content-length': body?.length ?? 0 });
    if (body !== undefined && body.length > 0 && this.#hasBody) this.#send(body, true);
    else if (this.#head !== null) {
      this.#sink.write(this.#chunked ? this.#head + this.#lastChunk : this.#head, true);
      this.#head = null;
    } else if (this.#chunked) this.#sink.write(this.#lastChunk, true);
    this.writableFinished = true;
    this.emit('finish');
    this.#sink.responseDone(this, this.#keepAlive);
  }

  destroy(): void {
    this.#sink.destroy();
  }

  /** Trailer fields after the last chunk; ignored, as node:http does, unless the body is chunked. */
  addTrailers(headers: LeanHeaders): void {
    let fields = '';
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      if (!isHttpToken(name)) throw new TypeError(`Trailer name must be a valid HTTP token ["${name}"]`);
      if (typeof value === 'object') for (const item of value) fields += headerLine(name, item);
      else fields += headerLine(name, typeof value === 'string' ? value : String(value));
    }
    this.#lastChunk = `0\r\n${fields}\r\n`;
  }

  /** Told when the client leaves before the answer is finished; cheaper than a 'close' listener per request. */
  clientGone: { fire(): void } | null = null;

  /** The connection closed before this response was finished. */
  clientClosed(): void {
    if (this.writableFinished) return;
    this.clientGone?.fire();
    this.emit('close');
  }

  #send(body: Buffer, last: boolean): boolean {
    const sink = this.#sink;
    const head = this.#head;
    this.#head = null;
    if (this.#chunked) {
      sink.cork();
      sink.write(`${head ?? ''}${body.length.toString(16)}\r\n`, true);
      sink.write(body);
      const ok = sink.write(last ? '\r\n' + this.#lastChunk : '\r\n', true);
      sink.uncork();
      return ok;
    }
    if (head === null) return sink.write(body);
    if (head.length + body.length <= COALESCE_LIMIT) {
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, 'latin1');
      body.copy(out, head.length);
      return sink.write(out);
    }
    sink.cork();
    sink.write(head, true);
    const ok = sink.write(body);
    sink.uncork();
    return ok;
  }
}

function headerLine(name: string, value: string): string {
  if (hasInvalidHeaderChar(value)) throw new TypeError(`Invalid character in header content ["${name}"]`);
  return `${name}: ${value}\r\n`;
}
