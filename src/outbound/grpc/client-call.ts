import { transportOf, type Context } from '../../core/context.js';
import type { ClientCall } from '../../core/transport.js';

/**
 * The client side of a gRPC call, attached to the context by the server (its
 * request body is left unread) and taken over by the upstream node, which
 * relays both directions itself (./relay.ts).
 */
export type { ClientCall } from '../../core/transport.js';

export function attachGrpcCall(ctx: Context, call: ClientCall): void {
  transportOf(ctx).grpcCall = call;
}

export function grpcCallOf(ctx: Context): ClientCall | undefined {
  return ctx.transport?.grpcCall;
}
