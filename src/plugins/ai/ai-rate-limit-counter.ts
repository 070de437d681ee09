import type { Store } from '../../stores/index.js';

/** Tokens used in one key's window, and how long until it resets. */
export interface TokenWindow {
  used: number;
  /** Milliseconds until the window resets (the whole window when it has not opened yet). */
  resetMs: number;
}

/** The answer to {@link TokenCounter.reserve}: whether the tokens were counted, and the window after it. */
export interface Reserved {
  admitted: boolean;
  window: TokenWindow;
}

/**
 * Token windows: `peek` reads one (before the call), `add` counts tokens into it (after the call,
 * or an estimate before; a negative `tokens` corrects an estimate). A window opens with the first
 * tokens counted into it and lasts `windowMs`. The local backend answers synchronously; a store
 * backend answers with a promise that rejects when the store fails.
 */
export interface TokenCounter {
  readonly backend: 'local' | 'redis';
  peek(key: string, windowMs: number): TokenWindow | Promise<TokenWindow>;
  add(key: string, tokens: number, windowMs: number): TokenWindow | Promise<TokenWindow>;
  /**
   * Counts `tokens` (an estimate, > 0) into the window unless it would carry it over `limit`, in
   * one step, so two processes checking one key at once cannot both pass on the same room.
   */
  reserve(key: string, tokens: number, limit: number, windowMs: number): Reserved | Promise<Reserved>;
}

const SWEEP_EVERY = 1024;

/** In-process windows shared by every local ai-rate-limit node of one gateway (keys carry the node's namespace). */
export class LocalTokenCounter implements TokenCounter {
  readonly backend = 'local';
  readonly #windows = new Map<string, { used: number; resetAt: number }>();
  #created = 0;

  peek(key: string, windowMs: number, now: number = Date.now()): TokenWindow {
    const window = this.#windows.get(key);
    if (window === undefined || now >= window.resetAt) return { used: 0, resetMs: windowMs };
    return { used: window.used, resetMs: window.resetAt - now };
  }

  add(key: string, tokens: number, windowMs: number, now: number = Date.now()): TokenWindow {
    let window = this.#windows.get(key);
    if (window === undefined || now >= window.resetAt) {
      // A correction (negative) of an estimate whose window already ended opens nothing.
      if (tokens <= 0) return { used: 0, resetMs: windowMs };
      if (window === undefined && ++this.#created % SWEEP_EVERY === 0) this.#sweep(now);
      window = { used: 0, resetAt: now + windowMs };
      this.#windows.set(key, window);
    }
    window.used = Math.max(0, window.used + tokens);
    return { used: window.used, resetMs: window.resetAt - now };
  }

  reserve(key: string, tokens: number, limit: number, windowMs: number, now: number = Date.now()): Reserved {
    const window = this.peek(key, windowMs, now);
    if (window.used + tokens > limit) return { admitted: false, window };
    return { admitted: true, window: this.add(key, tokens, windowMs, now) };
  }

  #sweep(now: number): void {
    for (const [key, window] of this.#windows) if (now >= window.resetAt) this.#windows.delete(key);
  }
}

const PEEK_SCRIPT = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return {0, tonumber(ARGV[1])} end
return {tonumber(redis.call('GET', KEYS[1])) or 0, ttl}
`;

/** Atomic on the server: a key without a TTL opens a new window; a correction below zero stops at zero. */
const ADD_SCRIPT = `
local ttl = redis.call('PTTL', KEYS[1])
local tokens = tonumber(ARGV[1])
if ttl < 0 then
  if tokens <= 0 then return {0, tonumber(ARGV[2])} end
  redis.call('SET', KEYS[1], tokens, 'PX', ARGV[2])
  return {tokens, tonumber(ARGV[2])}
end
local used = redis.call('INCRBY', KEYS[1], tokens)
if used < 0 then
  redis.call('SET', KEYS[1], 0, 'KEEPTTL')
  used = 0
end
return {used, ttl}
`;

/** ADD_SCRIPT for an estimate, unless it would carry the window over ARGV[2]: {admitted, used, ttl}. */
const RESERVE_SCRIPT = `
local ttl = redis.call('PTTL', KEYS[1])
local tokens = tonumber(ARGV[1])
if ttl < 0 then
  if tokens > tonumber(ARGV[2]) then return {0, 0, tonumber(ARGV[3])} end
  redis.call('SET', KEYS[1], tokens, 'PX', ARGV[3])
  return {1, tokens, tonumber(ARGV[3])}
end
local used = tonumber(redis.call('GET', KEYS[1])) or 0
if used + tokens > tonumber(ARGV[2]) then return {0, used, ttl} end
return {1, redis.call('INCRBY', KEYS[1], tokens), ttl}
`;

/**
 * Windows in a named store (`tok:<namespace>:<key>`, beside limit-count's `cnt:` counters), so
 * every gateway process and `workers` worker sharing the store counts into one budget.
 */
export class StoreTokenCounter implements TokenCounter {
  readonly backend = 'redis';
  constructor(readonly store: Store) {}

  async peek(key: string, windowMs: number): Promise<TokenWindow> {
    return this.#window(await this.store.eval(PEEK_SCRIPT, [`tok:${key}`], [windowMs]));
  }

  async add(key: string, tokens: number, windowMs: number): Promise<TokenWindow> {
    return this.#window(await this.store.eval(ADD_SCRIPT, [`tok:${key}`], [Math.trunc(tokens), windowMs]));
  }

  async reserve(key: string, tokens: number, limit: number, windowMs: number): Promise<Reserved> {
    const reply = await this.store.eval(
      RESERVE_SCRIPT,
      [`tok:${key}`],
      [Math.trunc(tokens), limit, windowMs],
    );
    if (!Array.isArray(reply) || reply.length !== 3) {
      throw new Error(`store '${this.store.name}': unexpected reply from the token-window script`);
    }
    const [admitted, used, ttl] = (reply as unknown[]).map(Number) as [number, number, number];
    return { admitted: admitted === 1, window: { used, resetMs: Math.max(0, ttl) } };
  }

  #window(reply: unknown): TokenWindow {
    if (!Array.isArray(reply) || reply.length !== 2) {
      throw new Error(`store '${this.store.name}': unexpected reply from the token-window script`);
    }
    const [used, ttl] = (reply as unknown[]).map(Number) as [number, number];
    return { used, resetMs: Math.max(0, ttl) };
  }
}

/** OpenAI's duration form of `x-ratelimit-reset-tokens`: `12s`, `6m0s`, `1h2m3s`. */
export function openAiDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
