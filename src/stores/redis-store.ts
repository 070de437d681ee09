import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { StoreConnection } from './connection.js';
import type { Store } from '../core/store.js';

/** Atomic "SET if absent with TTL, then INCRBY": the expiry is pinned to the key's creation. */
function incrPinned(client: Redis, key: string, by: number, ttlSeconds: number): Promise<number> {
  return client
    .multi()
    .set(key, '0', 'EX', ttlSeconds, 'NX')
    .incrby(key, by)
    .exec()
    .then((results) => {
      const last = results?.[1];
      if (last === undefined) throw new Error('transaction aborted');
      if (last[0] !== null) throw last[0];
      return Number(last[1]);
    });
}

function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

function wholeSeconds(ttlSeconds: number): number {
  if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) {
    throw new RangeError(`ttlSeconds must be a positive number (got ${ttlSeconds})`);
  }
  return Math.ceil(ttlSeconds);
}

/** A named view of a shared connection: adds the store's key prefix and its name to errors. */
export class RedisStore implements Store {
  readonly #conn: StoreConnection;
  readonly #prefix: string;
  readonly #shas = new Map<string, string>();

  constructor(
    readonly name: string,
    keyPrefix: string,
    conn: StoreConnection,
  ) {
    this.#conn = conn;
    this.#prefix = keyPrefix === '' ? '' : `${keyPrefix}:`;
  }

  #key(key: string): string {
    return this.#prefix + key;
  }

  get(key: string): Promise<string | null> {
    return this.#conn.run(this.name, 'GET', (c) => c.get(this.#key(key)));
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    const k = this.#key(key);
    if (ttlSeconds === undefined) await this.#conn.run(this.name, 'SET', (c) => c.set(k, value));
    else {
      const ttl = wholeSeconds(ttlSeconds);
      await this.#conn.run(this.name, 'SET', (c) => c.set(k, value, 'EX', ttl));
    }
  }

  async delete(key: string): Promise<void> {
    await this.#conn.run(this.name, 'DEL', (c) => c.del(this.#key(key)));
  }

  incr(key: string, by: number, ttlSeconds?: number): Promise<number> {
    if (!Number.isSafeInteger(by)) throw new RangeError(`by must be an integer (got ${by})`);
    const k = this.#key(key);
    if (ttlSeconds === undefined) return this.#conn.run(this.name, 'INCRBY', (c) => c.incrby(k, by));
    const ttl = wholeSeconds(ttlSeconds);
    return this.#conn.run(this.name, 'INCRBY', (c) => incrPinned(c, k, by, ttl));
  }

  async scan(prefix: string, cursor: string, count: number): Promise<{ keys: string[]; cursor: string }> {
    const pattern = `${globEscape(this.#key(prefix))}*`;
    const size = Math.max(1, Math.floor(count));
    if (this.#conn.masters() !== undefined) return this.#scanCluster(pattern, cursor, size);
    const [next, keys] = await this.#conn.run(this.name, 'SCAN', (c) =>
      c.scan(cursor, 'MATCH', pattern, 'COUNT', size),
    );
    return { keys: keys.map((k) => k.slice(this.#prefix.length)), cursor: next };
  }

  /**
   * A cluster keeps each key on one master: SCAN walks the masters in turn
   * (ordered by address) with a cursor `<master index>-<that master's cursor>`.
   */
  async #scanCluster(
    pattern: string,
    cursor: string,
    count: number,
  ): Promise<{ keys: string[]; cursor: string }> {
    const [indexText, inner] = cursor === '0' ? ['0', '0'] : cursor.split('-', 2);
    const index = Number(indexText);
    const result = await this.#conn.run(this.name, 'SCAN', async () => {
      const masters = (this.#conn.masters() ?? []).sort((a, b) =>
        `${a.options.host}:${a.options.port}`.localeCompare(`${b.options.host}:${b.options.port}`),
      );
      const node = masters[index];
      if (node === undefined || inner === undefined) return { keys: [], cursor: '0' };
      const [next, keys] = await node.scan(inner, 'MATCH', pattern, 'COUNT', count);
      const done = next === '0' && index + 1 >= masters.length;
      return { keys, cursor: done ? '0' : next === '0' ? `${index + 1}-0` : `${index}-${next}` };
    });
    return { keys: result.keys.map((k) => k.slice(this.#prefix.length)), cursor: result.cursor };
  }

  eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    let sha = this.#shas.get(script);
    if (sha === undefined) {
      sha = createHash('sha1').update(script).digest('hex');
      this.#shas.set(script, sha);
    }
    const digest = sha;
    const full = keys.map((k) => this.#key(k));
    return this.#conn.run(this.name, 'EVAL', async (c) => {
      try {
        return await c.evalsha(digest, full.length, ...full, ...args);
      } catch (err) {
        if (!(err instanceof Error)) throw err;
        // A cluster runs a script on one node: its keys must share a hash slot (docs/stores.md#sentinel-and-cluster).
        if (err.message.startsWith('CROSSSLOT')) {
          err.message += ' (a cluster store runs a script only over keys of one hash slot)';
          throw err;
        }
        if (!err.message.startsWith('NOSCRIPT')) throw err;
        return c.eval(script, full.length, ...full, ...args);
      }
    });
  }

  ping(): Promise<{ latency_ms: number; server_version: string }> {
    return this.#conn.run(this.name, 'PING', async (c) => {
      const started = performance.now();
      await c.ping();
      const latency = performance.now() - started;
      const info = await c.info('server');
      const version = /^(?:valkey_version|redis_version):(.+)$/m.exec(info)?.[1]?.trim() ?? 'unknown';
      return { latency_ms: Math.round(latency * 100) / 100, server_version: version };
    });
  }
}
