import { EventEmitter } from 'node:events';
import { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { BAD_REQUEST, REQUEST_TIMEOUT } from '../client-errors.js';
import { LeanRequest, type BodyFlow } from './lean-request.js';
import { LeanResponse, type ResponseSink } from './lean-response.js';
import { HTTPParser, type NativeParser } from '../../runtime/native-http-parser.js';
import { METHOD_BY_INDEX } from './methods.js';

export interface LeanFrontOptions {
  onRequest(req: LeanRequest, res: LeanResponse): void;
  /** WebSocket (and ignored) upgrades get a real IncomingMessage and the detached socket, as from node:http. */
  onUpgrade?: ((req: IncomingMessage, socket: Duplex, head: Buffer) => void) | undefined;
  /** `timeouts.connection_seconds`: a request head (or a new connection's first one) must be complete within it. */
  headersMs: number;
  /** connection + read seconds: the whole request, body included, must have arrived within it. */
  requestMs: number;
  /** `timeouts.idle_seconds`: a keep-alive connection with nothing in flight is closed after it. */
  idleMs: number;
}

/** Where the parser is in the request it is reading. */
const enum Phase {
  /** Between requests (keep-alive): only the idle timeout applies. */
  Idle,
  /** Reading a head: the headers timeout applies from `since`. */
  Head,
  /** Reading a body: the request timeout applies from `since`. */
  Body,
}

type Upgrade = {
  major: number;
  minor: number;
  raw: string[];
  method: string;
  url: string;
  head: Buffer;
};

/**
 * A lean HTTP/1.1 server for sockets handed to it (cleartext or TLS): node's
 * own llhttp parser, no IncomingMessage/ServerResponse streams on the hot path,
 * responses written straight to the socket, requests on one connection served
 * strictly in order. It keeps node:http's observable behaviour: the same
 * parser flags and limits (so the same 400s), the Host requirement of
 * HTTP/1.1, `Expect: 100-continue` (other expectations get 417), keep-alive and
 * pipelining, and the headers, request and keep-alive timeouts. Upgrades
 * leave it for `onUpgrade` exactly as they leave node:http.
 */
export class LeanHttp1Front {
  readonly options: LeanFrontOptions;
  /** Given to each socket as `socket.server`: emitting 'connection' serves the socket afresh (ignored upgrades). */
  readonly server = new EventEmitter();
  readonly connections = new Set<Connection>();
  readonly keepAliveSeconds: number;
  date = new Date().toUTCString();
  draining = false;
  readonly #timer: NodeJS.Timeout;

  constructor(options: LeanFrontOptions) {
    this.options = options;
    this.keepAliveSeconds = Math.floor(options.idleMs / 1000);
    this.server.on('connection', (socket: Socket) => this.serve(socket));
    // One sweep for every connection's timeouts (and the Date header), like node:http's connection checks.
    const every = Math.max(100, Math.min(1000, options.headersMs));
    this.#timer = setInterval(() => this.#sweep(), every);
    this.#timer.unref();
  }

  serve(socket: Socket): void {
    new Connection(this, socket);
  }

  /** Closes connections with nothing in flight; from now on every answer closes its connection. */
  closeIdleConnections(): void {
    this.draining = true;
    for (const c of this.connections) c.closeIfIdle();
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #sweep(): void {
    const now = Date.now();
    this.date = new Date(now).toUTCString();
    for (const c of this.connections) c.checkTimeouts(now);
  }
}

/** One client connection of the lean front. */
class Connection implements ResponseSink, BodyFlow {
  readonly #front: LeanHttp1Front;
  readonly #socket: Socket;
  readonly #parser: NativeParser;
  /** Parsed requests not yet handed to the data plane (pipelining). */
  readonly #queue: LeanRequest[] = [];
  /** The request being served and its response (null once the response ended). */
  #req: LeanRequest | null = null;
  #res: LeanResponse | null = null;
  /** The request whose body the parser is reading. */
  #incoming: LeanRequest | null = null;
  // Per-message state, reset when the parser begins and completes a message (#resetMessage):
  // nothing of one request may become part of the next (review F-1).
  /** Head pieces the parser flushed before the head was complete (long heads, many fields). */
  #partialRaw: string[] | null = null;
  #partialUrl = '';
  /** The head of the message being parsed is complete: a later kOnHeaders carries its trailer fields. */
  #headDone = false;
  #phase = Phase.Head;
  #since = Date.now();
  #inExecute = false;
  #paused = false;
  /** Paused by a streamed request body whose upstream is not draining (docs/routing.md#request-bodies). */
  #bodyPaused = false;
  /** Stop after what is in flight: an answer said close, or the client half-closed. */
  #closeAfter = false;
  /** A parse error or timeout to answer once what is in flight is done. */
  #pendingAnswer: string | null = null;
  #upgrade: Upgrade | null = null;
  #detached = false;

  constructor(front: LeanHttp1Front, socket: Socket) {
    this.#front = front;
    this.#socket = socket;
    (socket as Socket & { server: unknown }).server = front.server;
    socket.setNoDelay(true);
    const parser = new HTTPParser();
    parser.initialize(HTTPParser.REQUEST, {}, 0, HTTPParser.kLenientNone);
    parser[HTTPParser.kOnMessageBegin] = this.#resetMessage;
    parser[HTTPParser.kOnHeaders] = this.#onHeaders;
    parser[HTTPParser.kOnHeadersComplete] = this.#onHeadersComplete;
    parser[HTTPParser.kOnBody] = this.#onBody;
    parser[HTTPParser.kOnMessageComplete] = this.#onMessageComplete;
    this.#parser = parser;
    front.connections.add(this);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('drain', this.#onDrain);
    socket.on('error', this.#onError);
    socket.once('close', this.#onClose);
    socket.resume();
  }

  // --- ResponseSink ------------------------------------------------------------

  get reusable(): boolean {
    return !this.#closeAfter && !this.#front.draining && this.#pendingAnswer === null;
  }

  get keepAliveSeconds(): number {
    return this.#front.keepAliveSeconds;
  }

  get date(): string {
    return this.#front.date;
  }

  write(data: Buffer | string, latin1?: boolean): boolean {
    // Cut by a 400/408 or the client: an answer still in flight is dropped.
    if (!this.#socket.writable) return false;
    return latin1 === true ? this.#socket.write(data, 'latin1') : this.#socket.write(data);
  }

  cork(): void {
    this.#socket.cork();
  }

  uncork(): void {
    this.#socket.uncork();
  }

  destroy(): void {
    this.#socket.destroy();
  }

  responseDone(res: LeanResponse, keepAlive: boolean): void {
    if (res !== this.#res) return;
    this.#res = null;
    const req = this.#req;
    if (!keepAlive) {
      this.#closeAfter = true;
      this.#close();
      return;
    }
    if (req !== null && !req.complete) {
      // Answered before the body was read (404, 400…): the rest is read and dropped, then the next request.
      req.discardBody();
      return;
    }
    this.#next();
  }

  // --- BodyFlow: backpressure of a streamed request body ------------------------

  pauseBody(): void {
    if (this.#bodyPaused || this.#detached) return;
    this.#bodyPaused = true;
    this.#socket.pause();
  }

  resumeBody(): void {
    if (!this.#bodyPaused) return;
    this.#bodyPaused = false;
    if (!this.#paused && !this.#detached) this.#socket.resume();
  }

  // --- timeouts and draining ----------------------------------------------------

  checkTimeouts(now: number): void {
    const o = this.#front.options;
    const elapsed = now - this.#since;
    if (this.#phase === Phase.Head && elapsed > o.headersMs) this.#timeout();
    else if (this.#phase === Phase.Body && elapsed > o.requestMs) this.#timeout();
    else if (this.#phase === Phase.Idle && this.#isIdle() && elapsed > o.idleMs) this.#socket.destroy();
  }

  closeIfIdle(): void {
    if (this.#phase !== Phase.Body && this.#isIdle() && (this.#phase === Phase.Idle || this.#nothingRead))
      this.#socket.destroy();
  }

  /** True until the first byte of the first request arrived. */
  #nothingRead = true;

  #isIdle(): boolean {
    return this.#req === null && this.#queue.length === 0 && this.#upgrade === null;
  }

  #timeout(): void {
    this.#phase = Phase.Idle;
    // As node:http: a request whose body is still arriving gets 408 unless its answer has begun.
    if (this.#res !== null && this.#res.headersSent) this.#socket.destroy();
    else this.#answerAndClose(REQUEST_TIMEOUT);
  }

  // --- socket events ------------------------------------------------------------

  readonly #onData = (chunk: Buffer): void => {
    if (this.#detached || this.#pendingAnswer !== null) return;
    this.#nothingRead = false;
    if (this.#phase === Phase.Idle) {
      this.#phase = Phase.Head;
      this.#since = Date.now();
    }
    this.#inExecute = true;
    const parsed = this.#parser.execute(chunk);
    this.#inExecute = false;
    if (typeof parsed !== 'number') {
      this.#refuse();
      return;
    } else if (this.#upgrade !== null) {
      this.#upgrade.head = chunk.subarray(parsed);
      this.#stopReading();
    }
    this.#pump();
  };

  readonly #onEnd = (): void => {
    if (this.#detached) return;
    if (typeof this.#parser.finish() === 'object' && this.#phase !== Phase.Idle) {
      this.#refuse();
      return;
    }
    this.#closeAfter = true;
    this.#pump();
  };

  /**
   * Malformed or smuggling-shaped input. As node:http does: requests parsed
   * complete before it are dispatched (answers ready at once go out first),
   * then 400 goes out at once and the connection closes, cutting whatever is
   * still in flight. The request it interrupted never reaches the data plane.
   */
  #refuse(): void {
    const broken = this.#incoming;
    this.#incoming = null;
    this.#resetMessage();
    if (broken !== null) {
      const at = this.#queue.indexOf(broken);
      if (at !== -1) this.#queue.splice(at, 1);
      else broken.abort();
    }
    this.#pendingAnswer = BAD_REQUEST;
    this.#pump();
    if (!this.#detached) this.#answerAndClose(BAD_REQUEST);
  }

  readonly #onDrain = (): void => {
    this.#res?.emit('drain');
  };

  readonly #onError = (): void => {
    this.#socket.destroy();
  };

  readonly #onClose = (): void => {
    this.#front.connections.delete(this);
    if (!this.#detached) this.#parser.close();
    this.#detached = true;
    this.#incoming?.abort();
    this.#req?.abort();
    this.#res?.clientClosed();
    this.#queue.length = 0;
  };

  // --- parser callbacks (called synchronously inside execute) ---------------------

  readonly #resetMessage = (): void => {
    this.#partialRaw = null;
    this.#partialUrl = '';
    this.#headDone = false;
  };

  readonly #onHeaders = (raw: string[], url: string): void => {
    if (this.#headDone) {
      // The trailer section of a chunked body; node's binding hands the message's URL along
      // again. Trailers are the request's own (like node:http's req.trailers), never the next head.
      this.#incoming?.addTrailers(raw);
      return;
    }
    this.#partialRaw = this.#partialRaw === null ? raw : this.#partialRaw.concat(raw);
    this.#partialUrl += url;
  };

  readonly #onHeadersComplete = (
    major: number,
    minor: number,
    headers: string[] | undefined,
    methodIndex: number,
    url: string | undefined,
    _status: unknown,
    _statusMessage: unknown,
    upgrade: boolean,
    keepAlive: boolean,
  ): number => {
    let raw = headers ?? [];
    let target = url ?? '';
    if (this.#partialRaw !== null) raw = this.#partialRaw.concat(raw);
    target = this.#partialUrl + target;
    this.#partialRaw = null;
    this.#partialUrl = '';
    this.#headDone = true;
    const method = METHOD_BY_INDEX[methodIndex];
    // A method the parser accepts but the table does not name: refused (a parse error, 400), never renamed.
    if (method === undefined) return -1;
    this.#phase = Phase.Body;
    if (upgrade && (method === 'CONNECT' || this.#front.options.onUpgrade !== undefined)) {
      this.#upgrade = { major, minor, raw, method, url: target, head: EMPTY };
      return 2; // skip the body: whatever follows the head belongs to the upgraded protocol
    }
    const req = new LeanRequest(this.#socket, method, target, raw, major, minor, keepAlive);
    req.flow = this;
    this.#incoming = req;
    this.#queue.push(req);
    return 0;
  };

  readonly #onBody = (chunk: Buffer): void => {
    this.#incoming?.pushBody(chunk);
  };

  readonly #onMessageComplete = (): void => {
    const req = this.#incoming;
    this.#incoming = null;
    this.#resetMessage();
    this.#phase = Phase.Idle;
    this.#since = Date.now();
    if (req === null) return;
    req.finishBody();
    // Its answer already went out while the body was still arriving.
    if (req === this.#req && this.#res === null && !this.#inExecute) this.#next();
  };

  // --- serving in order -------------------------------------------------------------

  /** The request in flight is done (answered, body read): serve the next one. */
  #next(): void {
    this.#req = null;
    if (this.#phase === Phase.Idle) this.#since = Date.now();
    this.#pump();
  }

  #pump(): void {
    if (this.#inExecute || this.#detached) return;
    if (this.#req !== null) {
      // A request that finished while its answer was out but is not yet marked served.
      if (this.#res !== null || !this.#req.complete) return;
      this.#req = null;
    }
    const req = this.#queue.shift();
    if (req === undefined) {
      if (this.#pendingAnswer !== null) this.#answerAndClose(this.#pendingAnswer);
      else if (this.#upgrade !== null) this.#handOver(this.#upgrade);
      else if (this.#closeAfter) this.#close();
      else if (this.#paused) {
        this.#paused = false;
        if (!this.#bodyPaused) this.#socket.resume();
      }
      return;
    }
    // While pipelined requests wait, read no further.
    if (this.#queue.length > 0 && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
    this.#dispatch(req);
  }

  #dispatch(req: LeanRequest): void {
    const res = new LeanResponse(this, req);
    this.#req = req;
    this.#res = res;
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
      const headers = req.headers;
      // node:http's checks before its 'request' event: HTTP/1.1 needs Host (RFC 9112 §3.2); Expect.
      if (headers.host === undefined) {
        res.writeHead(400, { connection: 'close' });
        res.end();
        return;
      }
      const expect = headers.expect;
      if (expect !== undefined) {
        if (!CONTINUE_EXPECTATION.test(expect)) {
          res.writeHead(417, { 'content-length': 0 });
          res.end();
          return;
        }
        this.#socket.write(CONTINUE, 'latin1');
      }
    }
    this.#front.options.onRequest(req, res);
  }

  #stopReading(): void {
    this.#socket.pause();
    this.#paused = true;
  }

  #close(): void {
    this.#detached = true;
    const socket = this.#socket;
    if (socket.destroyed) return;
    socket.end(() => socket.destroy());
  }

  #answerAndClose(answer: string): void {
    this.#detached = true;
    const socket = this.#socket;
    if (!socket.writable) socket.destroy();
    else socket.end(answer, 'latin1', () => socket.destroy());
  }

  /** Leaves the socket to the upgrade handler with a real IncomingMessage, as node:http does. */
  #handOver(upgrade: Upgrade): void {
    const socket = this.#socket;
    this.#detached = true;
    this.#front.connections.delete(this);
    socket.off('data', this.#onData);
    socket.off('end', this.#onEnd);
    socket.off('drain', this.#onDrain);
    socket.off('error', this.#onError);
    socket.off('close', this.#onClose);
    this.#parser.close();
    const onUpgrade = this.#front.options.onUpgrade;
    if (upgrade.method === 'CONNECT' || onUpgrade === undefined) {
      socket.destroy(); // node:http without a 'connect' listener does the same
      return;
    }
    const req = new IncomingMessage(socket);
    req.httpVersionMajor = upgrade.major;
    req.httpVersionMinor = upgrade.minor;
    req.httpVersion = `${upgrade.major}.${upgrade.minor}`;
    req.method = upgrade.method;
    req.url = upgrade.url;
    (req as IncomingMessage & { upgrade: boolean }).upgrade = true;
    (req as unknown as { _addHeaderLines(raw: string[], n: number): void })._addHeaderLines(
      upgrade.raw,
      upgrade.raw.length,
    );
    // Neither flowing nor explicitly paused: the next reader decides (as node:http leaves it).
    (socket as unknown as { _readableState: { flowing: boolean | null } })._readableState.flowing = null;
    onUpgrade(req, socket, upgrade.head);
  }
}

const EMPTY = Buffer.alloc(0);
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
/** node:http's own test (`_http_common.continueExpression`): a list holding 100-continue counts. */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;
