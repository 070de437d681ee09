import type { Dispatcher, Pool } from 'undici';
import type { TlsMaterial } from '../tls/client.js';
import { undiciConnect } from '../tls/undici-connect.js';
import { loadUndici } from '../runtime/load-undici.js';
import { nativeHttpParserProblem } from '../runtime/native-http-parser.js';
import { LeanPool } from './lean/lean-pool.js';

/**
 * What the gateway asks of a shared pool. The undici pool behind it is made on the first
 * dispatch, so a process that only compiles a configuration (`switchyard validate`, a reload
 * that is refused) never loads undici.
 */
export interface OutboundDispatcher {
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
  close(): Promise<void>;
}

/** Identity of a shared pool: same origin, TLS material and connect timeout → same warm connections. */
export interface PoolSpec {
  /** `http://host:port` or `https://host:port`. */
  origin: string;
  /** Required for https origins; ignored for http. */
  tls: TlsMaterial | null;
  connectTimeoutMs: number;
}

/** A counted reference to a shared pool; `release()` once when the owning node is closed. */
export interface PoolLease {
  readonly pool: OutboundDispatcher;
  release(): void;
}

interface Entry {
  readonly key: string;
  readonly pool: LazyPool;
  refs: number;
  idleTimer: NodeJS.Timeout | null;
}

/**
 * How long an unreferenced pool stays open. A reload compiles the new
 * configuration before the old one is retired, so warm connections normally
 * change hands without this; it also covers retries of requests still running
 * on the retired configuration.
 */
const IDLE_GRACE_MS = 30_000;

const entries = new Map<string, Entry>();

/** Default of `upstream.max_connections_per_target`. */
export const DEFAULT_MAX_CONNECTIONS_PER_TARGET = 1024;
let maxConnectionsPerTarget = DEFAULT_MAX_CONNECTIONS_PER_TARGET;

/** `upstream.http1_client`: what speaks HTTP/1.1 to cleartext targets (docs/configuration.md). */
export type Http1Client = 'lean' | 'undici';
let http1Client: Http1Client = 'lean';

/**
 * Bounds the connections of pools created from now on
 * (`upstream.max_connections_per_target`): a burst of requests to one target
 * queues in its pool, within each request's deadline, instead of opening a
 * socket per request until descriptors run out.
 */
export function configurePools(options: {
  maxConnectionsPerTarget: number;
  http1Client?: Http1Client;
}): void {
  maxConnectionsPerTarget = options.maxConnectionsPerTarget;
  // undici when node's parser binding failed its start-up probe (the listener logs the WARN).
  http1Client = nativeHttpParserProblem === undefined ? (options.http1Client ?? 'lean') : 'undici';
}

/**
 * Returns the process-wide pool for `spec`, creating it on first use. Pools
 * outlive configurations: a reload that keeps a target keeps its connections.
 */
export function acquirePool(spec: PoolSpec): PoolLease {
  const https = spec.origin.startsWith('https:');
  const tls = https ? spec.tls : null;
  const connections = maxConnectionsPerTarget;
  const key = `${spec.origin}|${spec.connectTimeoutMs}|${connections}|${tls?.fingerprint ?? ''}|${http1Client}`;
  let entry = entries.get(key);
  if (entry === undefined) {
    const pool = new LazyPool(spec.origin, tls, spec.connectTimeoutMs, connections, http1Client);
    entry = { key, pool, refs: 0, idleTimer: null };
    entries.set(key, entry);
  }
  if (entry.idleTimer !== null) {
    clearTimeout(entry.idleTimer);
    entry.idleTimer = null;
  }
  entry.refs++;
  return new Lease(entry);
}

/** Number of open shared pools (diagnostics and tests). */
export function sharedPoolCount(): number {
  return entries.size;
}

/** Closes every shared pool, waiting for in-flight requests; for shutdown and test teardown. */
export async function closeAllPools(): Promise<void> {
  const all = [...entries.values()];
  entries.clear();
  for (const entry of all) if (entry.idleTimer !== null) clearTimeout(entry.idleTimer);
  await Promise.allSettled(all.map((entry) => entry.pool.close()));
}

class Lease implements PoolLease {
  #entry: Entry | null;
  readonly pool: OutboundDispatcher;

  constructor(entry: Entry) {
    this.#entry = entry;
    this.pool = entry.pool;
  }

  release(): void {
    const entry = this.#entry;
    if (entry === null) return;
    this.#entry = null;
    entry.refs--;
    if (entry.refs > 0 || entries.get(entry.key) !== entry) return;
    entry.idleTimer = setTimeout(retire, IDLE_GRACE_MS, entry);
    entry.idleTimer.unref();
  }
}

function retire(entry: Entry): void {
  if (entry.refs > 0 || entries.get(entry.key) !== entry) return;
  entries.delete(entry.key);
  // Graceful: requests already dispatched on this pool finish first.
  entry.pool.close().catch(ignore);
}

class LazyPool implements OutboundDispatcher {
  #pool: OutboundDispatcher | null = null;

  constructor(
    private readonly origin: string,
    private readonly tls: TlsMaterial | null,
    private readonly connectTimeoutMs: number,
    private readonly connections: number,
    private readonly client: Http1Client,
  ) {}

  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.#pool ??= this.#create();
    return this.#pool.dispatch(options, handler);
  }

  #create(): OutboundDispatcher {
    // TLS targets (and their ALPN h2) stay with undici.
    if (this.client === 'lean' && this.origin.startsWith('http:'))
      return new LeanPool(this.origin, {
        connections: this.connections,
        connectTimeoutMs: this.connectTimeoutMs,
      });
    return createPool(this.origin, this.tls, this.connectTimeoutMs, this.connections);
  }

  close(): Promise<void> {
    return this.#pool === null ? Promise.resolve() : this.#pool.close();
  }
}

function createPool(
  origin: string,
  tls: TlsMaterial | null,
  connectTimeoutMs: number,
  connections: number,
): Pool {
  const { Pool } = loadUndici();
  return new Pool(origin, {
    connections,
    // Per-request deadlines are enforced by the exchange; these are only the client-wide fallbacks.
    headersTimeout: 0,
    bodyTimeout: 0,
    // h2 is offered through ALPN to TLS targets; cleartext stays HTTP/1.1.
    allowH2: origin.startsWith('https:'),
    // With a client certificate, a connector that picks up a replaced pair (docs/tls.md#outbound-tls).
    connect:
      tls === null
        ? { timeout: connectTimeoutMs }
        : undiciConnect(tls, { timeout: connectTimeoutMs, allowH2: origin.startsWith('https:') }),
  });
}

function ignore(): void {}
