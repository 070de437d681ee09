import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Stream } from 'node:http2';
import type { Duplex, Readable } from 'node:stream';

/**
 * The client side of a request that a node, not the server, answers or relays: set by the data
 * plane on `Context.transport` (docs/architecture.md, "How a request flows") and taken over by the
 * upstream node, the WebSocket and gRPC relays, or the grpc-web node. A plain request has none.
 */

/** A request body relayed to the upstream as it arrives (`outbound/request-stream.ts` implements it). */
export interface StreamedRequestBody extends Readable {
  /** The client's Content-Length, kept on the upstream request; undefined sends it chunked. */
  readonly announced: number | undefined;
  /** Bytes received from the client so far (access log, limit). */
  readonly received: number;
  /** True while no byte has left for an upstream: the request can still go to another target. */
  readonly replayable: boolean;
  primed(): Promise<void> | undefined;
}

/** The client side of a WebSocket upgrade: an HTTP/1.1 socket, or an RFC 8441 HTTP/2 stream. */
export type ClientUpgrade =
  { kind: 'http1'; socket: Duplex; head: Buffer } | { kind: 'http2'; stream: ServerHttp2Stream };

/** The client side of a gRPC call: its request body is left unread for the relay (docs/grpc.md). */
export interface ClientCall {
  req: Http2ServerRequest;
  res: Http2ServerResponse;
}

/**
 * What answering needs of a response: node:http's ServerResponse, HTTP/2's
 * compatibility response and the lean front's LeanResponse all fit.
 */
export interface Reply {
  statusCode: number;
  readonly headersSent: boolean;
  readonly writableFinished: boolean;
  writeHead(status: number, headers?: Record<string, string | string[] | number>): unknown;
  write(chunk: Buffer): boolean;
  end(): unknown;
  end(chunk: Buffer | string): unknown;
  destroy(): unknown;
  once(event: 'close' | 'finish', listener: () => void): unknown;
  on(event: 'drain', listener: () => void): unknown;
}

/** The client's side of a gRPC-Web call: its reply, and the content type it was sent with. */
export interface GrpcWebClient {
  reply: Reply;
  /** As received (nodes may rewrite the request's headers; the answer's type follows this one). */
  contentType: string;
}

/** Every field is set in the constructor, so all transports share one object shape. */
export class ClientTransport {
  /** The unread body of a policy that streams request bodies (docs/routing.md#request-bodies). */
  requestStream: StreamedRequestBody | undefined = undefined;
  /** A WebSocket upgrade not yet taken over by the relay. */
  upgrade: ClientUpgrade | undefined = undefined;
  /** A gRPC call (docs/grpc.md). */
  grpcCall: ClientCall | undefined = undefined;
  /** A gRPC-Web call (docs/plugins/grpc-web.md): the grpc-web node writes the answer itself. */
  grpcWeb: GrpcWebClient | undefined = undefined;
  /** True once a node took the connection over: the server must not write a response. */
  relayed = false;
}
