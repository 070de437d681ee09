import type { ServerHttp2Stream } from 'node:http2';

/** When each gRPC stream that src/server/h2-guard.ts watches last made progress (performance.now()). */
export const lastProgress = new WeakMap<ServerHttp2Stream, { at: number }>();

/**
 * Told by the gRPC relay (./relay.ts) for every message it
 * moves, in either direction, on `stream`: the stream is not idle. Cheap: one
 * lookup and a store, no timer work.
 */
export function grpcStreamProgressed(stream: ServerHttp2Stream): void {
  const progress = lastProgress.get(stream);
  if (progress !== undefined) progress.at = performance.now();
}
