import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { startDaemon, type Daemon } from './daemon.js';
import { probe } from './redis-sentinel.js';
import { tempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

export interface RedisClusterSetup {
  /** Client ports of the masters. */
  readonly ports: number[];
  /** `redis://127.0.0.1:<port>` of every master: a store's `urls`. */
  readonly urls: string[];
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster of `masters` (default 3, no replicas) system
 * `redis-server` processes on free loopback ports (client and bus port both
 * probed), joined with `redis-cli --cluster create --cluster-yes`. Returns
 * once every node reports `cluster_state:ok`. Always `stop()` it.
 */
export async function startRedisCluster(masters = 3): Promise<RedisClusterSetup> {
  const dir = tempDir('switchyard-cluster-');
  const nodes: Daemon[] = [];
  const ports: number[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((d) => d.stop()));
    dir.remove();
  };
  try {
    for (let i = 0; i < masters; i++) {
      const {
        daemon,
        ports: [port],
      } = await startDaemon({
        name: 'redis-server (cluster node)',
        ports: 2,
        command: ([p, bus], attempt) => ({
          bin: 'redis-server',
          args: [
            '--bind',
            '127.0.0.1',
            '--port',
            String(p),
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(bus),
            '--cluster-config-file',
            `${dir.path}/nodes-${i}-${attempt}.conf`,
            '--cluster-node-timeout',
            '3000',
            '--save',
            '',
            '--appendonly',
            'no',
            '--dir',
            dir.path,
          ],
        }),
        ready: async ([p]) => (await probe(p ?? 0, (c) => c.ping())) === 'PONG',
        timeoutMs: 15000,
      });
      nodes.push(daemon);
      ports.push(port ?? 0);
    }
    const create = spawn(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    create.stdout.on('data', (d: Buffer) => (output += d.toString()));
    create.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => create.kill('SIGKILL'), 30000);
    const [code] = (await once(create, 'exit')) as [number | null];
    clearTimeout(timer);
    if (code !== 0) throw new Error(`redis-cli --cluster create exited ${code}: ${output.slice(-2000)}`);
    await waitFor(
      async () => {
        for (const p of ports) {
          const info = await probe(p, (c) => c.cluster('INFO'));
          if (typeof info !== 'string' || !info.includes('cluster_state:ok')) return false;
        }
        return true;
      },
      { timeoutMs: 20000, what: 'cluster_state:ok on every node' },
    );
    return { ports, urls: ports.map((p) => `redis://127.0.0.1:${p}`), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
