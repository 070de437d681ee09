import { createRequire } from 'node:module';
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { StoreError } from './errors.js';
import type { ConnectionSpec } from './resolve.js';

/** Backoff between background reconnects; the whole series stops at the connect budget. */
const RECONNECT_BASE_MS = 50;
const RECONNECT_MAX_MS = 1000;

/**
 * One ioredis client, shared by every store whose connection spec is equal.
 *
 * Never hangs a request: nothing is queued while disconnected
 * (`enableOfflineQueue: false`); an operation first waits for a connection
 * attempt already under way (bounded by `connect_timeout_ms`), fails at once
 * while the client is backing off between reconnects, and as a whole gives up
 * after `connect_budget_ms`. Background reconnects stop once an outage has
 * lasted the budget; the next operation then dials again.
 */
export class StoreConnection {
  /** A Cluster speaks the same commands as a Redis client (routing each by its key's slot). */
  readonly #client: Redis | Cluster;
  readonly #spec: ConnectionSpec;
  #lastError: Error | undefined;
  #outageSince = 0;
  #connecting: Promise<void> | undefined;
  #closed = false;

  constructor(spec: ConnectionSpec) {
    this.#spec = spec;
    // Required here, not imported at the top: a gateway without stores never loads ioredis (~15 MiB).
    const ioredis = createRequire(import.meta.url)('ioredis') as {
      Redis: typeof Redis;
      Cluster: typeof Cluster;
    };
    const credentials = {
      ...(spec.username === undefined ? {} : { username: spec.username }),
      ...(spec.password === undefined ? {} : { password: spec.password }),
      ...(spec.tls ? { tls: spec.ca === undefined ? {} : { ca: spec.ca } } : {}),
      connectTimeout: spec.connectTimeoutMs,
    } satisfies RedisOptions;
    const retryStrategy = (times: number): number | null => this.#retryDelay(times);
    const { topology } = spec;
    if (topology.topology === 'cluster') {
      const options = {
        lazyConnect: true,
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        slotsRefreshTimeout: spec.connectTimeoutMs,
        // Redirections (MOVED/ASK during resharding) are followed; a node that is down fails the command.
        maxRedirections: 16,
        redisOptions: { ...credentials, maxRetriesPerRequest: 0 },
      } satisfies ClusterOptions;
      this.#client = new ioredis.Cluster(topology.nodes, options);
    } else {
      this.#client = new ioredis.Redis({
        ...credentials,
        db: spec.db,
        ...(topology.topology === 'sentinel'
          ? {
              sentinels: topology.nodes,
              name: topology.masterName ?? '',
              ...(topology.sentinelPassword === undefined
                ? {}
                : { sentinelPassword: topology.sentinelPassword }),
              ...(spec.tls ? { enableTLSForSentinelMode: true, sentinelTLS: credentials.tls ?? {} } : {}),
              sentinelRetryStrategy: retryStrategy,
            }
          : { host: spec.host, port: spec.port }),
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        retryStrategy,
      });
    }
    // A listener keeps ioredis from printing connection errors; the last one explains failures.
    this.#client.on('error', (err: Error) => {
      this.#lastError = err;
    });
    this.#client.on('ready', () => {
      this.#lastError = undefined;
    });
  }

  get budgetMs(): number {
    return this.#spec.connectBudgetMs;
  }

  /** Runs `fn` once connected, bounded by the connect budget; failures become StoreErrors. */
  async run<T>(store: string, what: string, fn: (client: Redis) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError('STORE_UNAVAILABLE', store, `store '${store}': client closed`);
    let timer: NodeJS.Timeout | undefined;
    let expired = false;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        expired = true;
        reject(
          new StoreError(
            'STORE_TIMEOUT',
            store,
            `store '${store}': ${what} gave up after ${this.#spec.connectBudgetMs} ms (connect_budget_ms) waiting for ${this.#address()}${this.#lastError === undefined ? '' : ` (${this.#lastError.message})`}`,
          ),
        );
      }, this.#spec.connectBudgetMs);
    });
    // A command whose connection came too late is not sent: its caller has already been told it failed.
    const attempt = this.#ready(store).then(() =>
      expired ? Promise.reject(new Error('expired')) : fn(this.#client as Redis),
    );
    try {
      return await Promise.race([attempt, deadline]);
    } catch (err) {
      throw this.#classify(store, what, err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The master nodes of a cluster (SCAN visits each); `undefined` for other topologies. */
  masters(): Redis[] | undefined {
    return this.#spec.topology.topology === 'cluster' ? (this.#client as Cluster).nodes('master') : undefined;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#client.disconnect();
  }

  async #ready(store: string): Promise<void> {
    const client = this.#client;
    switch (client.status) {
      case 'ready':
        return;
      case 'wait':
      case 'end':
        this.#connecting ??= client.connect().finally(() => {
          this.#connecting = undefined;
        });
        return this.#connecting;
      case 'connecting':
      case 'connect':
        return this.#connecting ?? waitForReady(client);
      default:
        // Backing off between reconnects: fail now rather than hold the request.
        throw new StoreError('STORE_UNAVAILABLE', store, `store '${store}': ${this.#reason()}`);
    }
  }

  #retryDelay(times: number): number | null {
    if (this.#closed) return null;
    if (times === 1) this.#outageSince = Date.now();
    const delay = Math.min(RECONNECT_BASE_MS * 2 ** (times - 1), RECONNECT_MAX_MS);
    return Date.now() - this.#outageSince + delay > this.#spec.connectBudgetMs ? null : delay;
  }

  /** Why commands fail now, naming the server dialled and the last connection error (F33). */
  #reason(): string {
    const to = `to ${this.#address()}`;
    return this.#lastError === undefined
      ? `not connected ${to}`
      : `not connected ${to} (${this.#lastError.message})`;
  }

  /** The server(s) this connection dials: `127.0.0.1:6379`, `sentinels a:26379,b:26379 (master m)`, `cluster a:7000,…`. */
  #address(): string {
    const { topology } = this.#spec;
    const list = (nodes: readonly { host: string; port: number }[]): string =>
      nodes.map((n) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`)).join(',');
    if (topology.topology === 'cluster') return `cluster ${list(topology.nodes)}`;
    if (topology.topology === 'sentinel')
      return `sentinels ${list(topology.nodes)} (master ${topology.masterName ?? ''})`;
    return list([{ host: this.#spec.host, port: this.#spec.port }]);
  }

  #classify(store: string, what: string, err: unknown): StoreError {
    if (err instanceof StoreError) return err;
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof Error && err.name === 'ReplyError') {
      const invalid = /not an integer|WRONGTYPE|not a valid float|overflow/i.test(message);
      return new StoreError(
        invalid ? 'STORE_VALUE_INVALID' : 'STORE_COMMAND_FAILED',
        store,
        `store '${store}': ${what}: ${message}`,
        { cause: err },
      );
    }
    const detail =
      this.#lastError !== undefined && /closed|writeable/i.test(message) ? this.#reason() : message;
    return new StoreError('STORE_UNAVAILABLE', store, `store '${store}': ${what}: ${detail}`, { cause: err });
  }
}

function waitForReady(client: Redis | Cluster): Promise<void> {
  return new Promise((resolve, reject) => {
    const onReady = (): void => {
      client.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      client.off('ready', onReady);
      reject(new Error('Connection is closed.'));
    };
    client.once('ready', onReady);
    client.once('close', onClose);
  });
}
