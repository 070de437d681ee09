import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Context } from '../../core/context.js';

/**
 * The client side of a gRPC call, attached to the context by the server (its
 * request body is left unread) and taken over by the upstream node, which
 * relays both directions itself (./relay.ts).
 */
export interface ClientCall {
  req: Http2ServerRequest;
  res: Http2ServerResponse;
}

const calls = new WeakMap<Context, ClientCall>();

export function attachGrpcCall(ctx: Context, call: ClientCall): void {
  calls.set(ctx, call);
}

export function grpcCallOf(ctx: Context): ClientCall | undefined {
  return calls.get(ctx);
}
