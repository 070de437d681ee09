/**
 * Named key-value stores (`stores:` in gateway.yaml, docs/stores.md), shared by
 * store nodes, sessions, rate limits, the proxy cache and ACME. Keys passed
 * in are logical: the store prepends its `key_prefix` and a colon; callers
 * put their namespace first (`kv:<key>`, `sess:{<id>}`, `cnt:…`).
 */
export interface Store {
  readonly name: string;
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** Adds `by`; the TTL is set only when the key is created (pinned). Returns the new value. */
  incr(key: string, by: number, ttlSeconds?: number): Promise<number>;
  /** One SCAN step over keys starting with `prefix`; cursor `'0'` starts and, returned, ends. */
  scan(prefix: string, cursor: string, count: number): Promise<{ keys: string[]; cursor: string }>;
  /** Runs a Lua script (EVALSHA, falling back to EVAL); `keys` are prefixed like every other key. */
  eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown>;
  ping(): Promise<{ latency_ms: number; server_version: string }>;
}

/** What nodes see at compile time (`env.stores`): the stores of the configuration being compiled. */
export interface StoreLookup {
  get(name: string): Store | undefined;
}
