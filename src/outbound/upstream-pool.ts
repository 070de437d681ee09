import { firstHeader, type Context, type RequestPart } from '../core/context.js';
import { NodeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { BalancerKind } from './balancer/index.js';
import type { HashKey } from './balancer/chash.js';
import { selectTarget } from './balancer/select.js';
import type { HeaderMap } from '../core/context.js';
import { relayWebSocket } from './websocket-relay.js';
import { ipVersion } from '../runtime/ip-version.js';
import type { Balancer } from './balancer/types.js';
import { classifyFailure } from './classify.js';
import { exchange, type ExchangeLimits, type ExchangeRequest } from './exchange.js';
import { checkKey, httpProbe, type ActivePolicy } from './health/active.js';
import type { PassivePolicy } from './health/passive.js';
import { HealthRegistry } from './health/registry.js';
import { acquirePool, type PoolLease } from './pool-registry.js';
import { buildRequestHeaders, HOST_VALUE_INDEX } from './proxy-headers.js';
import { BodyAlreadySent, requestStreamOf } from './request-stream.js';
import {
  formatAddress,
  Target,
  targetStatesOf,
  type HealthListener,
  type TargetSpec,
  type UpstreamTargetState,
} from './target.js';
import { createPriorityBalancer } from './discovery/priority.js';
import type { TlsMaterial } from '../tls/client.js';

export type PassHost = 'pass' | 'node' | 'rewrite';

/** A checked upstream definition; everything here is resolved at configuration time. */
export interface UpstreamPoolOptions {
  targets: readonly TargetSpec[];
  balancer: BalancerKind;
  hashKey: HashKey;
  scheme: 'http' | 'https';
  /** Required for https. */
  tls: TlsMaterial | null;
  limits: ExchangeLimits;
  /**
   * Extra attempts on other targets after a failure before the request reached a socket; null:
   * one fewer than the targets there are at the time (they change with `setTargets`).
   */
  retries: number | null;
  passive: PassivePolicy;
  active: ActivePolicy | null;
  passHost: PassHost;
  /** Host header for `passHost: 'rewrite'`. */
  upstreamHost: string;
  logger: Logger;
  /** Log coordinates of the owner (policy and node ids); with `health`, also the owner's identity. */
  where: Readonly<Record<string, string>>;
  /**
   * Where health state outlives this pool (the gateway's, so a reload keeps it); a private one
   * when absent.
   */
  health?: HealthRegistry | undefined;
}

/** The key of a target's passive health: the owning node, the target, the passive settings. */
export function passiveKey(
  where: Readonly<Record<string, string>>,
  origin: string,
  tls: TlsMaterial | null,
  passive: PassivePolicy,
): string {
  return [
    JSON.stringify(where),
    origin,
    tls?.fingerprint ?? '',
    passive.maxFails,
    passive.failTimeoutMs,
  ].join('\u0000');
}

export type { UpstreamTargetState } from './target.js';

/** One target and what it holds: its shared pool and its shared health state. */
interface HeldTarget {
  readonly target: Target;
  readonly pool: PoolLease;
  /** Releases the shared health state (passive, active check) of the target. */
  readonly health: (() => void)[];
}

/**
 * A load-balanced set of targets behind shared connection pools: picks a
 * target, forwards the request, retries connect failures elsewhere, and keeps
 * passive and active health. One per upstream node; `close()` when retired.
 * `setTargets` replaces the set while requests run (service discovery,
 * docs/service-discovery.md): kept targets keep their state, new ones join the shared
 * health registry, requests in flight finish on the target they picked.
 */
export class UpstreamPool {
  #targets: readonly Target[] = [];
  #balancer: Balancer | null = null;
  /** By address, weight and priority: what `setTargets` keeps. */
  #held = new Map<string, HeldTarget>();
  #closed = false;
  readonly #options: UpstreamPoolOptions;
  readonly #log: HealthLog;
  readonly #health: HealthRegistry;
  readonly #limits: ExchangeLimits;
  readonly #retries: number | null;
  readonly #passHost: PassHost;
  readonly #upstreamHost: string;
  readonly #logger: Logger;
  readonly #where: Readonly<Record<string, string>>;
  readonly #scheme: 'http' | 'https';
  readonly #tls: TlsMaterial | null;

  constructor(options: UpstreamPoolOptions) {
    this.#options = options;
    this.#log = new HealthLog(options.logger, options.where, options.passive.failTimeoutMs);
    this.#health = options.health ?? new HealthRegistry();
    // The answer is relayed: the exchange leaves hop-by-hop fields out while parsing.
    this.#limits = { ...options.limits, dropHopByHop: true };
    this.#scheme = options.scheme;
    this.#tls = options.tls;
    this.#retries = options.retries;
    this.#passHost = options.passHost;
    this.#upstreamHost = options.upstreamHost;
    this.#logger = options.logger;
    this.#where = options.where;
    this.setTargets(options.targets);
  }

  /**
   * Moves the pool to `specs` (one per address; an empty list leaves no target, and requests
   * fail with UPSTREAM_NO_HEALTHY_TARGET). Ignored once closed.
   */
  setTargets(specs: readonly TargetSpec[]): void {
    if (this.#closed) return;
    const next = new Map<string, HeldTarget>();
    for (const spec of specs) {
      const key = `${formatAddress(spec.host, spec.port)}\u0000${spec.weight}\u0000${spec.priority ?? 0}`;
      if (next.has(key)) continue;
      next.set(key, this.#held.get(key) ?? this.#hold(spec, next.size));
    }
    for (const [key, held] of this.#held) if (!next.has(key)) release(held);
    this.#held = next;
    this.#targets = [...next.values()].map((h) => h.target);
    this.#balancer =
      this.#targets.length === 0
        ? null
        : createPriorityBalancer(this.#options.balancer, this.#targets, this.#options.hashKey);
  }

  #hold(spec: TargetSpec, index: number): HeldTarget {
    const options = this.#options;
    const tls = options.scheme === 'https' ? options.tls : null;
    const origin = `${options.scheme}://${formatAddress(spec.host, spec.port)}`;
    const pool = acquirePool({ origin, tls: options.tls, connectTimeoutMs: options.limits.deadlineMs });
    const passive = this.#health.passive(
      passiveKey(options.where, origin, tls, options.passive),
      options.passive,
    );
    const target = new Target(index, spec, pool.pool, passive.state, this.#log);
    const health = [passive.release];
    const active = options.active;
    if (active !== null) {
      const host = options.passHost === 'rewrite' ? options.upstreamHost : target.address;
      const key = checkKey(target.address, options.scheme, tls?.fingerprint ?? '', host, active);
      const check = this.#health.check(key, active, {
        probe: httpProbe(target.pool, active, host),
        changed: (up, reason) => target.probeChanged(up, reason),
      });
      target.useCheck(check.state);
      health.push(check.release);
    }
    return { target, pool, health };
  }

  /** The balancer of the current set; throws when there is no target (discovery found none yet). */
  #pick(ctx: Context, tried: Target[] | null): Target {
    const balancer = this.#balancer;
    if (balancer === null)
      throw new NodeError('UPSTREAM_NO_HEALTHY_TARGET', 'the upstream has no target (none discovered yet)');
    return selectTarget(balancer, ctx, tried);
  }

  #retryBudget(): number {
    return this.#retries ?? Math.max(0, this.#targets.length - 1);
  }

  /**
   * Proxies `ctx.request` and fills `ctx.response` (status, headers, and the
   * body or, in streaming mode, the flowing stream); resolves to `result`.
   * Throws a NodeError with metadata `{target}` when no answer was obtained.
   */
  async forward<R>(ctx: Context, result: R): Promise<R> {
    const request = ctx.request;
    const headers = buildRequestHeaders(request, '');
    // docs/routing.md#request-bodies: a streamed body goes once; after its first byte, no retry.
    const streamed = requestStreamOf(ctx);
    if (streamed !== undefined && !streamed.replayable)
      throw new NodeError('UPSTREAM_REQUEST_BUILD_ERROR', new BodyAlreadySent().message);
    if (streamed?.announced === undefined) await streamed?.primed();
    if (streamed?.destroyed === true)
      throw new NodeError(
        'UPSTREAM_CLIENT_ABORTED',
        'the request body failed before it reached the upstream',
      );
    const outbound: ExchangeRequest = {
      method: request.method,
      path: request.url,
      headers,
      body: streamed ?? request.body,
    };
    const signal = ctx.clientGone;
    let tried: Target[] | null = null;
    for (let attempt = 0; ; attempt++) {
      const target = this.#pick(ctx, tried);
      headers[HOST_VALUE_INDEX] = this.#hostFor(target, request);
      const sentAt = performance.now();
      try {
        const res = await exchange(target.pool, outbound, this.#limits, signal, target);
        const seconds = (performance.now() - sentAt) / 1000;
        ctx.upstream = { where: this.#where, address: target.address, status: res.status, seconds };
        const response = ctx.response;
        if (response.stream !== null) response.discardStream();
        response.status = res.status;
        response.headers = withEarlierHeaders(res.headers, response.headers);
        response.body = res.body;
        response.stream = res.stream;
        response.relayed = this.#limits.streaming;
        return result;
      } catch (err) {
        const failure = classifyFailure(err);
        if (
          failure.retryable &&
          attempt < this.#retryBudget() &&
          !signal.aborted &&
          (streamed === undefined || streamed.replayable)
        ) {
          this.#logger.warn(
            { ...this.#where, target: target.address, reason: failure.reason, attempt: attempt + 1 },
            'upstream connect failed; retrying on another target',
          );
          (tried ??= []).push(target);
          continue;
        }
        throw new NodeError(failure.code, `upstream ${target.address}: ${failure.reason}`, {
          metadata: { target: target.address },
          cause: err,
        });
      }
    }
  }

  /**
   * WebSocket: opens the upstream leg to a target (ws, or wss when the pool is
   * https) and splices it to the client; a refused upgrade fills `ctx.response`.
   * Connect failures are retried on another target like `forward`.
   */
  async relay<R>(ctx: Context, result: R): Promise<R> {
    let tried: Target[] | null = null;
    for (let attempt = 0; ; attempt++) {
      const target = this.#pick(ctx, tried);
      const tls = this.#tls;
      const hostHeader = this.#hostFor(target, ctx.request);
      try {
        await relayWebSocket(ctx, {
          host: target.host,
          port: target.port,
          tls: this.#scheme === 'https',
          hostHeader,
          timeoutMs: this.#limits.deadlineMs,
          ...(tls === null
            ? {}
            : {
                tlsOptions: {
                  rejectUnauthorized: tls.rejectUnauthorized,
                  ...(tls.servername === undefined
                    ? servernameFor(hostHeader)
                    : { servername: tls.servername }),
                  ...(tls.ca === undefined ? {} : { ca: tls.ca }),
                  ...(tls.cert === undefined ? {} : { cert: tls.cert }),
                  ...(tls.key === undefined ? {} : { key: tls.key }),
                },
              }),
        });
        return result;
      } catch (err) {
        const failure = classifyFailure(err);
        if (failure.retryable && attempt < this.#retryBudget()) {
          (tried ??= []).push(target);
          continue;
        }
        throw new NodeError(failure.code, `upstream ${target.address}: ${failure.reason}`, {
          metadata: { target: target.address },
          cause: err,
        });
      }
    }
  }

  targetStates(): UpstreamTargetState[] {
    return targetStatesOf(this.#targets);
  }

  /**
   * Releases the shared health state (a check no other node uses stops) and the shared pools
   * (they stay warm for a successor). Idempotent.
   */
  close(): void {
    this.#closed = true;
    for (const held of this.#held.values()) release(held);
    this.#held.clear();
  }

  #hostFor(target: Target, request: RequestPart): string {
    switch (this.#passHost) {
      case 'node':
        return target.address;
      case 'rewrite':
        return this.#upstreamHost;
      case 'pass': {
        const host = firstHeader(request.headers, 'host') ?? request.host;
        return host === '' ? target.address : host;
      }
    }
  }
}

function release(held: HeldTarget): void {
  for (const done of held.health) done();
  held.pool.release();
}

/**
 * Response headers set by nodes before the upstream (CORS, request id, a
 * cookie) survive the backend's response unless the backend sets the same name.
 */
function withEarlierHeaders(backend: HeaderMap, earlier: HeaderMap): HeaderMap {
  for (const name in earlier) {
    if (backend[name] === undefined && earlier[name] !== undefined) backend[name] = earlier[name];
  }
  return backend;
}

/** TLS SNI for the Host sent upstream: its name without port; none for IP literals (RFC 6066). */
function servernameFor(hostHeader: string): { servername?: string } {
  const name = hostHeader.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return ipVersion(name) === 0 ? { servername: name } : {};
}

/** Logs targets leaving and rejoining the rotation. */
class HealthLog implements HealthListener {
  readonly #logger: Logger;
  readonly #where: Readonly<Record<string, string>>;
  readonly #ejectMs: number;

  constructor(logger: Logger, where: Readonly<Record<string, string>>, ejectMs: number) {
    this.#logger = logger;
    this.#where = where;
    this.#ejectMs = ejectMs;
  }

  targetHealthChanged(target: Target, up: boolean, check: 'passive' | 'active', reason: string): void {
    const fields = { ...this.#where, target: target.address, check, reason };
    if (up) this.#logger.info(fields, 'upstream target back in rotation');
    else if (check === 'passive')
      this.#logger.warn({ ...fields, ejected_ms: this.#ejectMs }, 'upstream target ejected');
    else this.#logger.warn(fields, 'upstream target marked down');
  }
}
