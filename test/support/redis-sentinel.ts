import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startDaemon, type Daemon } from './daemon.js';
import { startRedis, type RedisServer } from './redis.js';
import { tempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

export interface SentinelSetup {
  /** The name the sentinels monitor: a store's `master_name`. */
  readonly masterName: string;
  readonly master: RedisServer;
  /** A replica of the master, for failover tests. */
  readonly replica: RedisServer;
  /** `redis://127.0.0.1:<port>` of each sentinel: a store's `urls`. */
  readonly urls: string[];
  /** Port of the server the sentinels currently name as master. */
  currentMasterPort(): Promise<number>;
  stop(): Promise<void>;
}

/** Runs one command on a fresh connection that gives up quickly (readiness probes). */
export async function probe<T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T | undefined> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    connectTimeout: 500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/**
 * A master, one replica and `sentinels` (default 2) system `redis-sentinel`
 * processes monitoring them, all on free loopback ports, with quorum 1 and
 * a 1 s down-after so a failover test finishes in seconds. Returns once every
 * sentinel names the master and knows the replica. Always `stop()` it.
 */
export async function startSentinels(sentinels = 2, masterName = 'mymaster'): Promise<SentinelSetup> {
  const dir = tempDir('switchyard-sentinel-');
  const master = await startRedis();
  const started: Daemon[] = [];
  let replica: RedisServer | undefined;
  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map((d) => d.stop()));
    await replica?.stop();
    await master.stop();
    dir.remove();
  };
  try {
    replica = await startRedis();
    const r = replica;
    // Replication must not leave dump.rdb in the shared temp dir (other tests' servers would load it):
    // the master streams without a disk copy and the replica loads from the socket.
    await probe(master.port, async (c) => {
      await c.config('SET', 'repl-diskless-sync', 'yes');
      await c.config('SET', 'repl-diskless-sync-delay', '0');
    });
    await probe(r.port, async (c) => {
      await c.config('SET', 'repl-diskless-load', 'swapdb');
      await c.replicaof('127.0.0.1', String(master.port));
    });
    await waitFor(
      async () =>
        (await probe(r.port, (c) => c.info('replication')))?.includes('master_link_status:up') ?? false,
      {
        timeoutMs: 15000,
        what: 'the replica to sync',
      },
    );
    const ports: number[] = [];
    for (let i = 0; i < sentinels; i++) {
      const {
        daemon,
        ports: [port],
      } = await startDaemon({
        name: 'redis-sentinel',
        ports: 1,
        command: ([p], attempt) => {
          // Sentinel rewrites its configuration file, so each gets its own writable copy.
          const file = join(dir.path, `sentinel-${i}-${attempt}.conf`);
          writeFileSync(
            file,
            [
              `port ${p}`,
              'bind 127.0.0.1',
              `dir ${dir.path}`,
              `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 1`,
              `sentinel down-after-milliseconds ${masterName} 1000`,
              `sentinel failover-timeout ${masterName} 5000`,
              '',
            ].join('\n'),
          );
          return { bin: 'redis-sentinel', args: [file] };
        },
        ready: async ([p]) =>
          (await probe(p ?? 0, (c) => c.call('SENTINEL', 'get-master-addr-by-name', masterName))) !==
          undefined,
        timeoutMs: 15000,
      });
      started.push(daemon);
      ports.push(port ?? 0);
    }
    await waitFor(
      async () => {
        for (const p of ports) {
          const replicas = (await probe(p, (c) => c.call('SENTINEL', 'replicas', masterName))) as
            unknown[] | undefined;
          if (replicas === undefined || replicas.length === 0) return false;
        }
        return true;
      },
      { timeoutMs: 20000, what: 'the sentinels to discover the replica' },
    );
    const first = ports[0] ?? 0;
    return {
      masterName,
      master,
      replica: r,
      urls: ports.map((p) => `redis://127.0.0.1:${p}`),
      async currentMasterPort() {
        const addr = (await probe(first, (c) =>
          c.call('SENTINEL', 'get-master-addr-by-name', masterName),
        )) as [string, string] | undefined;
        return Number(addr?.[1] ?? 0);
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
