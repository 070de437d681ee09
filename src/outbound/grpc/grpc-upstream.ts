import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { connect as netConnect, isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { firstHeader, type Context } from '../../engine/context.js';
import { NodeError } from '../../engine/errors.js';
import type { Logger } from '../../observability/logger.js';
import { markRelayed } from '../../server/websocket.js';
import { createBalancer, type BalancerKind } from '../balancer/index.js';
import type { HashKey } from '../balancer/chash.js';
import { selectTarget } from '../balancer/select.js';
import type { Balancer } from '../balancer/types.js';
import { classifyCause } from '../classify.js';
import { ClientAbortedError, DeadlineExceededError, type ExchangePhase } from '../errors.js';
import type { PassivePolicy } from '../health/passive.js';
import { acquirePool, type PoolLease } from '../pool-registry.js';
import { formatAddress, Target, type TargetSpec } from '../target.js';
import type { TlsMaterial } from '../tls.js';
import type { PassHost, UpstreamTargetState } from '../upstream-pool.js';
import { appendVia } from '../via.js';
import { grpcCallOf, type ClientCall } from './client-call.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_FLAG_END_STREAM } = constants;

export interface GrpcUpstreamOptions {
  targets: readonly TargetSpec[];
  balancer: BalancerKind;
  hashKey: HashKey;
  /** grpcs: TLS with ALPN h2; grpc: cleartext HTTP/2 with prior knowledge. */
  tls: TlsMaterial | null;
  /** `timeout_ms`: connect + request headers + response headers, per call. */
  deadlineMs: number;
  passive: PassivePolicy;
  passHost: PassHost;
  upstreamHost: string;
  logger: Logger;
  where: Readonly<Record<string, string>>;
}

/**
 * Headers of the client's hop that never go upstream (RFC 9113 §8.2.2), plus
 * `host` (the upstream gets its own `:authority`) and `content-length`.
 */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
  'te',
  'content-length',
]);

/**
 * The `upstream` node with `scheme: grpc | grpcs` (docs/grpc.md): one HTTP/2
 * session per target, shared by every call to it; each call is relayed stream
 * to stream in both directions with backpressure, and the upstream's response
 * headers and trailers reach the client as they are. Balancing and passive
 * health are the HTTP upstream's.
 */
export class GrpcUpstream {
  readonly #targets: readonly Target[];
  readonly #balancer: Balancer;
  readonly #sessions = new Map<Target, ClientHttp2Session>();
  readonly #leases: PoolLease[] = [];
  readonly #options: GrpcUpstreamOptions;
  #closed = false;

  constructor(options: GrpcUpstreamOptions) {
    this.#options = options;
    this.#targets = options.targets.map((spec, i) => {
      // Target needs a Dispatcher for HTTP exchanges; the gRPC path never uses it (undici pools
      // connect lazily, so this lease opens no connection).
      const lease = acquirePool({
        origin: `http://${formatAddress(spec.host, spec.port)}`,
        tls: null,
        connectTimeoutMs: options.deadlineMs,
      });
      this.#leases.push(lease);
      return new Target(i, spec, lease.pool, options.passive, null);
    });
    this.#balancer = createBalancer(options.balancer, this.#targets, options.hashKey);
  }

  /**
   * Relays the gRPC call of `ctx` to one target; resolves to `result` once the
   * call is over (the client stream closed). Before the upstream answered,
   * failures throw a NodeError (the server turns it into a gRPC status);
   * after, an upstream reset is passed on to the client as a reset.
   */
  call<R>(ctx: Context, result: R): Promise<R> {
    const call = grpcCallOf(ctx);
    if (call === undefined) {
      return Promise.reject(
        new NodeError('UPSTREAM_REQUEST_BUILD_ERROR', 'a grpc upstream needs an HTTP/2 gRPC request', {}),
      );
    }
    const target = selectTarget(this.#balancer, ctx, null);
    return new Promise<R>((resolve, reject) => {
      this.#relay(ctx, call, target, () => resolve(result), reject);
    });
  }

  #relay(
    ctx: Context,
    call: ClientCall,
    target: Target,
    done: () => void,
    fail: (err: NodeError) => void,
  ): void {
    const { req, res } = call;
    const client = res.stream;
    const startedAt = performance.now();
    let phase: ExchangePhase = 'connect';
    let answered = false;
    let ended = false;
    target.exchangeStarted();
    const end = (err: Error | null) => {
      if (ended) return;
      ended = true;
      target.exchangeEnded(err, phase);
    };

    let upstream: ClientHttp2Stream;
    try {
      const session = this.#session(target);
      upstream = session.request(this.#headers(ctx, target), { endStream: false });
    } catch (err) {
      end(err as Error);
      fail(this.#failure(target, err, phase));
      return;
    }
    phase = 'request';
    const timer = setTimeout(() => {
      upstream.destroy(new DeadlineExceededError(this.#options.deadlineMs));
    }, this.#options.deadlineMs);
    timer.unref();

    // The client's messages go upstream as they arrive; pipe() pauses the client when upstream is full.
    req.pipe(upstream);

    upstream.once('response', (headers: IncomingHttpHeaders, flags: number) => {
      clearTimeout(timer);
      phase = 'body';
      answered = true;
      target.exchangeHeaders(performance.now() - startedAt);
      const status = Number(headers[':status'] ?? 502);
      ctx.upstream = {
        where: this.#options.where,
        address: target.address,
        status,
        seconds: (performance.now() - startedAt) / 1000,
      };
      ctx.response.status = status;
      markRelayed(ctx);
      if (client.destroyed || client.closed) {
        upstream.close(NGHTTP2_CANCEL);
        return;
      }
      const out = responseHeaders(headers);
      res.statusCode = status;
      if ((flags & NGHTTP2_FLAG_END_STREAM) !== 0) {
        // Trailers-only: grpc-status is in this one HEADERS frame.
        client.respond(out, { endStream: true });
        return;
      }
      client.respond(out, { waitForTrailers: true });
      // The compatibility response owns the stream's 'wantTrailers' and sends what addTrailers()
      // collected; the upstream's trailers arrive before its 'end', hence before client.end().
      let trailers = false;
      upstream.once('trailers', (t: IncomingHttpHeaders) => {
        trailers = true;
        res.addTrailers(responseHeaders(t, false));
      });
      upstream.once('end', () => {
        // An upstream that ended its stream without trailers broke the gRPC protocol.
        if (!trailers)
          res.addTrailers({
            'grpc-status': '13',
            'grpc-message': 'upstream ended the call without trailers',
          });
      });
      upstream.pipe(client);
    });

    upstream.on('error', (err: Error) => {
      clearTimeout(timer);
      req.unpipe(upstream);
      end(err);
      if (!answered) {
        fail(this.#failure(target, err, phase));
        return;
      }
      // Mid-call: the client learns the call broke the way gRPC over HTTP/2 says (RST_STREAM).
      if (!client.destroyed && !client.closed) client.close(upstream.rstCode ?? NGHTTP2_CANCEL);
    });
    upstream.once('close', () => {
      clearTimeout(timer);
      if (answered && !ended) {
        const code = upstream.rstCode;
        // A reset after the answer (no END_STREAM from upstream): pass it on.
        if (code !== undefined && code !== NGHTTP2_NO_ERROR && !client.destroyed && !client.closed)
          client.close(code);
        end(null);
      } else if (!answered && !ended) {
        const err = new Error(`upstream closed the stream before answering (code ${upstream.rstCode})`);
        end(err);
        fail(this.#failure(target, Object.assign(err, { code: 'ECONNRESET' }), phase));
      }
    });

    const clientGone = () => {
      clearTimeout(timer);
      if (!upstream.closed && !upstream.destroyed) upstream.close(NGHTTP2_CANCEL);
    };
    client.once('close', () => {
      if (!answered && !ended) {
        end(new ClientAbortedError());
        fail(this.#failure(target, new ClientAbortedError(), phase));
      }
      clientGone();
      if (answered) done();
    });
    if (client.destroyed || client.closed) clientGone();
  }

  #failure(target: Target, err: unknown, phase: ExchangePhase): NodeError {
    const failure = classifyCause(causeOf(err), phase);
    return new NodeError(failure.code, `grpc upstream ${target.address}: ${failure.reason}`, {
      metadata: { target: target.address },
      cause: err,
    });
  }

  #headers(ctx: Context, target: Target): OutgoingHttpHeaders {
    const request = ctx.request;
    const out: OutgoingHttpHeaders = {};
    for (const name in request.headers) {
      const value = request.headers[name];
      if (value === undefined || HOP.has(name) || name.charCodeAt(0) === 58) continue;
      out[name] = value;
    }
    out[':method'] = 'POST';
    out[':path'] = request.url;
    out[':scheme'] = this.#options.tls === null ? 'http' : 'https';
    out[':authority'] = this.#hostFor(target, ctx);
    out.te = 'trailers';
    out.via = appendVia(request.headers.via);
    return out;
  }

  #hostFor(target: Target, ctx: Context): string {
    switch (this.#options.passHost) {
      case 'node':
        return target.address;
      case 'rewrite':
        return this.#options.upstreamHost;
      case 'pass': {
        const host = firstHeader(ctx.request.headers, 'host') ?? ctx.request.host;
        return host === '' ? target.address : host;
      }
    }
  }

  /** The live HTTP/2 session to `target`, opened on first use and replaced once it closes or errs. */
  #session(target: Target): ClientHttp2Session {
    if (this.#closed) throw Object.assign(new Error('upstream node retired'), { code: 'UND_ERR_CLOSED' });
    const existing = this.#sessions.get(target);
    if (existing !== undefined && !existing.closed && !existing.destroyed) return existing;
    const tls = this.#options.tls;
    const authority = `${tls === null ? 'http' : 'https'}://${target.address}`;
    // Our own socket, with Nagle off: small gRPC frames must not wait for delayed ACKs (~40 ms each).
    const createConnection = (): Duplex => {
      const socket =
        tls === null
          ? netConnect({ host: target.host, port: target.port })
          : tlsConnect({
              host: target.host,
              port: target.port,
              ALPNProtocols: ['h2'],
              rejectUnauthorized: tls.rejectUnauthorized,
              ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
              ...(tls.ca === undefined ? {} : { ca: tls.ca }),
              ...(tls.cert === undefined ? {} : { cert: tls.cert }),
              ...(tls.key === undefined ? {} : { key: tls.key }),
            });
      socket.setNoDelay(true);
      return socket;
    };
    const session = connect(authority, { createConnection });
    const forget = () => {
      if (this.#sessions.get(target) === session) this.#sessions.delete(target);
    };
    // Errors reach the calls on the session as stream errors; the session itself is just dropped.
    session.on('error', forget);
    session.once('goaway', forget);
    session.once('close', forget);
    // An idle session does not keep the process alive (shutdown waits for calls, not sessions).
    session.unref();
    this.#sessions.set(target, session);
    return session;
  }

  targetStates(): UpstreamTargetState[] {
    const now = Date.now();
    return this.#targets.map((t) => ({
      address: t.address,
      weight: t.weight,
      available: t.isAvailable(now),
      ejectedUntil: t.passive.ejectedUntil,
      consecutiveFailures: t.passive.consecutiveFailures,
      probeUp: t.probeUp,
      active: t.active,
    }));
  }

  /** Lets calls in flight finish, then closes the sessions; releases the leases. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const session of this.#sessions.values()) session.close();
    this.#sessions.clear();
    for (const lease of this.#leases.splice(0)) lease.release();
  }
}

/** Response headers and trailers as the client may receive them: no pseudo-headers but `:status`. */
function responseHeaders(headers: IncomingHttpHeaders, withStatus = true): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 || HOP.has(name)) continue;
    out[name] = headers[name];
  }
  if (withStatus) out[':status'] = Number(headers[':status'] ?? 200);
  return out;
}

/** Node wraps a failed session's error in the stream's; the socket error says what happened. */
function causeOf(err: unknown): unknown {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof Error ? cause : err;
}
