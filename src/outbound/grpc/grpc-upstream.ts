import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { ipVersion } from '../../runtime/ip-version.js';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { firstHeader, type Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { createBalancer, type BalancerKind } from '../balancer/index.js';
import type { HashKey } from '../balancer/chash.js';
import { selectTarget } from '../balancer/select.js';
import type { Balancer } from '../balancer/types.js';
import { checkKey, USER_AGENT, type ActivePolicy } from '../health/active.js';
import { checkGrpcHealth } from '../health/grpc-check.js';
import type { PassivePolicy } from '../health/passive.js';
import { HealthRegistry } from '../health/registry.js';
import { acquirePool, type PoolLease } from '../pool-registry.js';
import {
  formatAddress,
  Target,
  targetStatesOf,
  type HealthListener,
  type TargetSpec,
  type UpstreamTargetState,
} from '../target.js';
import type { TlsMaterial } from '../../tls/client.js';
import { passiveKey, type PassHost } from '../upstream-pool.js';
import { appendVia } from '../via.js';
import { grpcCallOf } from './client-call.js';
import { GrpcRelay, HOP, type RelayHost } from './relay.js';

export interface GrpcUpstreamOptions {
  targets: readonly TargetSpec[];
  balancer: BalancerKind;
  hashKey: HashKey;
  /** grpcs: TLS with ALPN h2; grpc: cleartext HTTP/2 with prior knowledge. */
  tls: TlsMaterial | null;
  /** `timeout_ms`: connect + request headers + response headers, per attempt; caps `grpc-timeout`. */
  deadlineMs: number;
  /** Extra attempts on another target on UNAVAILABLE before the first byte (docs/grpc.md, "Retries"). */
  retries: number;
  passive: PassivePolicy;
  /** `type: grpc` calls grpc.health.v1.Health/Check (docs/grpc.md, "Health checks"). */
  active: ActivePolicy | null;
  passHost: PassHost;
  upstreamHost: string;
  logger: Logger;
  where: Readonly<Record<string, string>>;
  /** Where health state outlives this upstream (../upstream-pool.ts, `health`). */
  health?: HealthRegistry | undefined;
}

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
  readonly #host: RelayHost;
  /** Releases the shared health state (passive, active checks) this upstream holds. */
  readonly #healthLeases: (() => void)[] = [];
  #closed = false;

  constructor(options: GrpcUpstreamOptions) {
    this.#options = options;
    const health = options.health ?? new HealthRegistry();
    const scheme = options.tls === null ? 'grpc' : 'grpcs';
    const log = new HealthLog(options.logger, options.where);
    this.#targets = options.targets.map((spec, i) => {
      // Target needs a Dispatcher for HTTP exchanges; the gRPC path never uses it (undici pools
      // connect lazily, so this lease opens no connection).
      const lease = acquirePool({
        origin: `http://${formatAddress(spec.host, spec.port)}`,
        tls: null,
        connectTimeoutMs: options.deadlineMs,
      });
      this.#leases.push(lease);
      const origin = `${scheme}://${formatAddress(spec.host, spec.port)}`;
      const passive = health.passive(
        passiveKey(options.where, origin, options.tls, options.passive),
        options.passive,
      );
      this.#healthLeases.push(passive.release);
      return new Target(i, spec, lease.pool, passive.state, log);
    });
    this.#balancer = createBalancer(options.balancer, this.#targets, options.hashKey);
    this.#host = {
      timeoutMs: options.deadlineMs,
      retries: options.retries,
      logger: options.logger,
      where: options.where,
      pick: (ctx, tried) => selectTarget(this.#balancer, ctx, tried),
      session: (target) => this.#session(target),
      headers: (ctx, target) => this.#headers(ctx, target),
    };
    const active = options.active;
    if (active !== null) {
      const probeScheme = options.tls === null ? 'http' : 'https';
      for (const target of this.#targets) {
        const authority = options.passHost === 'rewrite' ? options.upstreamHost : target.address;
        const probe = (signal: AbortSignal) => {
          let session: ClientHttp2Session;
          try {
            session = this.#session(target);
          } catch (err) {
            return Promise.resolve({ healthy: false, reason: (err as Error).message });
          }
          return checkGrpcHealth(
            session,
            {
              service: active.grpcService,
              authority,
              scheme: probeScheme,
              timeoutMs: active.timeoutMs,
              userAgent: USER_AGENT,
            },
            signal,
          );
        };
        const key = checkKey(target.address, scheme, options.tls?.fingerprint ?? '', authority, active);
        const check = health.check(key, active, {
          probe,
          changed: (up, reason) => target.probeChanged(up, reason),
        });
        target.useCheck(check.state);
        this.#healthLeases.push(check.release);
      }
    }
  }

  /**
   * Relays the gRPC call of `ctx` to one target (./relay.ts); resolves to
   * `result` once the call is over (the client stream closed). Before the
   * upstream answered, failures throw a NodeError (the server turns it into a
   * gRPC status); after, an upstream reset is passed on to the client as a reset.
   */
  call<R>(ctx: Context, result: R): Promise<R> {
    const call = grpcCallOf(ctx);
    if (call === undefined) {
      return Promise.reject(
        new NodeError('UPSTREAM_REQUEST_BUILD_ERROR', 'a grpc upstream needs an HTTP/2 gRPC request', {}),
      );
    }
    return new Promise<R>((resolve, reject) => {
      new GrpcRelay(this.#host, ctx, call, () => resolve(result), reject).start();
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
              ...(tls.servername !== undefined
                ? { servername: tls.servername }
                : ipVersion(target.host) === 0
                  ? { servername: target.host }
                  : {}),
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
    return targetStatesOf(this.#targets);
  }

  /** Lets calls in flight finish, then closes the sessions; releases the leases. Idempotent. */
  close(): void {
    this.#closed = true;
    // First: a probe of a check that other upstreams share goes through their sessions from now on.
    for (const release of this.#healthLeases.splice(0)) release();
    for (const session of this.#sessions.values()) session.close();
    this.#sessions.clear();
    for (const lease of this.#leases.splice(0)) lease.release();
  }
}

/** Logs targets leaving and rejoining the rotation (passive ejection, active gRPC checks). */
class HealthLog implements HealthListener {
  readonly #logger: Logger;
  readonly #where: Readonly<Record<string, string>>;

  constructor(logger: Logger, where: Readonly<Record<string, string>>) {
    this.#logger = logger;
    this.#where = where;
  }

  targetHealthChanged(target: Target, up: boolean, check: 'passive' | 'active', reason: string): void {
    const fields = { ...this.#where, target: target.address, check, reason };
    if (up) this.#logger.info(fields, 'grpc upstream target back in rotation');
    else this.#logger.warn(fields, 'grpc upstream target out of rotation');
  }
}
