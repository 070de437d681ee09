import { LRUCache } from 'lru-cache';
import type { LoginThrottleConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import { ADMIN_ERROR_STATUS, adminErrorBody } from '../core/errors.js';

/** Failures of one client address (an IPv4 address or an IPv6 /64). */
interface ClientState {
  windowStart: number;
  failures: number;
  /** A few of the user names tried in this window, for the lock line. */
  users: Set<string>;
  lockedUntil: number;
  /** Locks in a row: each one doubles the next (up to max_lock_seconds). */
  locks: number;
  lastFailure: number;
  /** Attempts refused while locked, reported on the next line logged for this client. */
  refused: number;
}

/** Failures against one user name from any address: logged once per window, never locking. */
interface UserState {
  windowStart: number;
  failures: number;
  clients: Set<string>;
  reported: boolean;
}

const MAX_USERS_LISTED = 5;
const MAX_CLIENTS_COUNTED = 1000;
/** User names come from the attacker; keep log lines short. */
const MAX_LOGGED_NAME = 64;

const shown = (name: string | undefined): string =>
  name === undefined
    ? '(undecodable)'
    : name.length > MAX_LOGGED_NAME
      ? `${name.slice(0, MAX_LOGGED_NAME)}…`
      : name;

/** `bearer token`, or `'digest' credentials` for another scheme. */
const credentialsOf = (scheme: string): string =>
  scheme === 'bearer' ? 'bearer token' : `'${scheme}' credentials`;

/**
 * M1: throttles failed HTTP Basic logins of the admin listener per client
 * address. `max_failures` failures within `window_seconds` locks the address
 * for `lock_seconds`, doubling with each further lock up to
 * `max_lock_seconds`; while locked, even the right password is refused (429),
 * or guessing would go on. Other addresses are unaffected, so an attacker
 * cannot lock the administrator out. Memory is bounded by two LRUs of
 * `max_tracked` entries. Logging is aggregated: each failure up to the lock,
 * then one line per lock, whatever the attempt rate.
 */
export class LoginThrottle {
  readonly #config: LoginThrottleConfig;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #clients: LRUCache<string, ClientState>;
  readonly #users: LRUCache<string, UserState>;

  constructor(config: LoginThrottleConfig, logger: Logger, now: () => number = Date.now) {
    this.#config = config;
    this.#logger = logger;
    this.#now = now;
    this.#clients = new LRUCache({ max: config.max_tracked });
    this.#users = new LRUCache({ max: config.max_tracked });
  }

  /** Seconds until `address` may try again, or undefined when it may try now. */
  retryAfter(address: string): number | undefined {
    if (!this.#config.enabled) return undefined;
    const state = this.#clients.get(clientKey(address));
    if (state === undefined) return undefined;
    const left = state.lockedUntil - this.#now();
    if (left <= 0) return undefined;
    state.refused++;
    return Math.ceil(left / 1000);
  }

  /**
   * Records a failed login; answers the lock in seconds when this failure started one. `scheme`:
   * the Authorization scheme when it was not Basic (a Bearer token), logged as such (F33).
   */
  failed(address: string, username: string | undefined, scheme?: string): number | undefined {
    if (!this.#config.enabled) return undefined;
    const now = this.#now();
    const key = clientKey(address);
    const windowMs = this.#config.window_seconds * 1000;
    let state = this.#clients.get(key);
    if (state === undefined) {
      state = {
        windowStart: now,
        failures: 0,
        users: new Set(),
        lockedUntil: 0,
        locks: 0,
        lastFailure: now,
        refused: 0,
      };
      this.#clients.set(key, state);
    }
    // A long quiet spell forgets earlier locks, so the next lock starts short again.
    if (now - state.lastFailure > this.#config.max_lock_seconds * 1000) state.locks = 0;
    if (now - state.windowStart >= windowMs) {
      state.windowStart = now;
      state.failures = 0;
      state.users.clear();
    }
    state.failures++;
    state.lastFailure = now;
    const claimed = scheme === undefined ? shown(username) : `(${credentialsOf(scheme)})`;
    if (state.users.size < MAX_USERS_LISTED) state.users.add(claimed);
    this.#noteUser(username, key, now);
    const refused = state.refused;
    state.refused = 0;
    this.#logger.warn(
      {
        ...(scheme === undefined ? { user: shown(username) } : { scheme }),
        client: address,
        failures: state.failures,
        ...(refused > 0 ? { refused_while_locked: refused } : {}),
      },
      scheme === undefined
        ? 'admin login failed'
        : `admin login failed: ${credentialsOf(scheme)} not accepted here (the Admin API takes HTTP Basic credentials)`,
    );
    if (state.failures < this.#config.max_failures) return undefined;
    const seconds = Math.min(this.#config.lock_seconds * 2 ** state.locks, this.#config.max_lock_seconds);
    state.locks++;
    state.lockedUntil = now + seconds * 1000;
    state.windowStart = now;
    state.failures = 0;
    this.#logger.warn(
      {
        client: address,
        failures: this.#config.max_failures,
        users: [...state.users],
        lock_seconds: seconds,
      },
      'admin login locked: too many failed logins from this address',
    );
    state.users.clear();
    return seconds;
  }

  /** A successful login clears the address's failures (a lock, if any, was checked before). */
  succeeded(address: string): void {
    this.#clients.delete(clientKey(address));
  }

  #noteUser(username: string | undefined, client: string, now: number): void {
    if (username === undefined) return;
    let user = this.#users.get(username);
    if (user === undefined || now - user.windowStart >= this.#config.window_seconds * 1000) {
      user = { windowStart: now, failures: 0, clients: new Set(), reported: false };
      this.#users.set(username, user);
    }
    user.failures++;
    if (user.clients.size < MAX_CLIENTS_COUNTED) user.clients.add(client);
    // Guessing spread over many addresses never trips a per-address lock; say so once per window.
    if (!user.reported && user.failures > this.#config.max_failures && user.clients.size > 1) {
      user.reported = true;
      this.#logger.warn(
        { user: shown(username), failures: user.failures, clients: user.clients.size },
        'admin login: many failed logins for one user from several addresses',
      );
    }
  }
}

/** The throttling key of a client: its IPv4 address, or the /64 of an IPv6 one (one host's usual share). */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1] as string;
  if (!address.includes(':')) return address;
  const bare = address.split('%')[0] as string;
  const [head = '', tail] = bare.split('::');
  const groups = (part: string | undefined): string[] =>
    part === undefined || part === ''
      ? []
      : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined
      ? left
      : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** The answer to a request from a locked address (Admin Basic and MCP bearer alike). */
export function tooManyFailures(seconds: number): {
  status: 429;
  body: { error: string; message: string };
  headers: Record<string, string>;
} {
  return {
    status: ADMIN_ERROR_STATUS.too_many_failed_logins,
    body: adminErrorBody('too_many_failed_logins', {
      message: `too many failed logins from this address; retry in ${seconds} s`,
    }),
    headers: { 'retry-after': String(seconds) },
  };
}
