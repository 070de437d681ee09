import { compatNames } from '../config/compat-names.js';
import type { Context } from '../core/context.js';
import { NodeError } from '../core/errors.js';
import { StoreError, type Store } from '../stores/index.js';
import { appendSetCookie, sessionCookie } from './cookie.js';
import type { SessionSettings } from './config.js';
import { Sealer } from './sealer.js';
import { deleteSession, getSession, newSessionId, putSession, SESSION_ID } from './stored.js';

export {
  resolveSessionSettings,
  sessionSchemaProperties,
  type SessionConfig,
  type SessionSettings,
} from './config.js';
export {
  deleteSession,
  deleteSubjectSessions,
  listSessions,
  SESSION_ID,
  type SessionFilter,
  type SessionMeta,
  type SessionPage,
} from './stored.js';

/** An open session. */
export interface Session {
  subject: string;
  /** Unix seconds. */
  createdAt: number;
  expiresAt: number;
  /** Plugin-specific fields sealed with the session. */
  data: Record<string, unknown>;
}

interface Payload {
  sub: string;
  iat: number;
  exp: number;
  d?: Record<string, unknown>;
}

const now = (): number => Math.floor(Date.now() / 1000);

/**
 * Browser sessions of one interactive auth node. `cookie` storage seals the
 * whole session into the cookie; `kvstore` keeps the sealed payload in a store
 * under a random 128-bit id and gives the browser only the id, so sessions can
 * be listed and revoked. Anything that does not open (tampered, truncated,
 * sealed with another secret, expired, revoked) is no session. A store failure
 * is `SESSION_STORE_ERROR` (503): never a 401, which would loop users through
 * a login whose callback cannot persist the session either.
 */
export class Sessions {
  readonly #settings: SessionSettings;
  readonly #sealer: Sealer;
  readonly #plugin: string;

  constructor(settings: SessionSettings, plugin: string) {
    this.#settings = settings;
    this.#sealer = new Sealer(settings.secret, 'session');
    this.#plugin = plugin;
  }

  get storage(): SessionSettings['storage'] {
    return this.#settings.storage;
  }

  /** The session the request's cookie opens. Sync in cookie mode: no promise on that path. */
  open(ctx: Context): Session | undefined | Promise<Session | undefined> {
    const value = ctx.request.cookies.get(this.#settings.cookie.name);
    if (value === undefined || value === '') return undefined;
    const store = this.#settings.store;
    if (store === undefined) return this.#unseal(value, `${this.#plugin}|cookie`);
    if (!SESSION_ID.test(value)) return undefined;
    return getSession(store, value).then(
      (sealed) => (sealed === null ? undefined : this.#unseal(sealed, `${this.#plugin}|${value}`)),
      (err: unknown) => this.#storeFailed(store, 'open', err),
    );
  }

  /** Starts a session for `subject` and adds its Set-Cookie to the prepared response. */
  async establish(ctx: Context, subject: string, data: Record<string, unknown> = {}): Promise<void> {
    const { cookie, store } = this.#settings;
    const iat = now();
    const exp = iat + Math.ceil(cookie.lifetime);
    const payload: Payload =
      Object.keys(data).length === 0 ? { sub: subject, iat, exp } : { sub: subject, iat, exp, d: data };
    const text = JSON.stringify(payload);
    if (store === undefined) {
      appendSetCookie(ctx, sessionCookie(ctx, cookie, this.#sealer.seal(text, `${this.#plugin}|cookie`)));
      return;
    }
    const id = newSessionId();
    const meta = {
      subject,
      plugin: this.#plugin,
      policy: ctx.policy,
      route: ctx.route,
      created_at: iat,
      expires_at: exp,
    };
    try {
      await putSession(store, id, this.#sealer.seal(text, `${this.#plugin}|${id}`), meta, cookie.lifetime);
    } catch (err) {
      this.#storeFailed(store, 'establish', err);
    }
    appendSetCookie(ctx, sessionCookie(ctx, cookie, id));
  }

  /** Ends the request's session: deletes the stored one (kvstore) and expires the cookie. */
  async end(ctx: Context): Promise<void> {
    const { cookie, store } = this.#settings;
    const value = ctx.request.cookies.get(cookie.name);
    if (store !== undefined && value !== undefined && SESSION_ID.test(value)) {
      try {
        await deleteSession(store, value);
      } catch (err) {
        this.#storeFailed(store, 'revoke', err);
      }
    }
    appendSetCookie(ctx, sessionCookie(ctx, cookie, '', 0));
  }

  #unseal(token: string, context: string): Session | undefined {
    const text = this.#sealer.open(token, context);
    if (text === undefined) return this.#unsealReference(token);
    let payload: Payload;
    try {
      payload = JSON.parse(text) as Payload;
    } catch {
      return undefined;
    }
    if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number' || payload.exp <= now())
      return undefined;
    return { subject: payload.sub, createdAt: payload.iat, expiresAt: payload.exp, data: payload.d ?? {} };
  }

  /**
   * With `compat.store_layout: reference`, a session the reference sealed
   * (same secret) opens too: its payload names the user (`user`, `sub` or
   * `user_id`); its plugin-specific fields are not carried over.
   */
  #unsealReference(token: string): Session | undefined {
    if (compatNames().storeLayout !== 'reference') return undefined;
    const text = this.#sealer.openReference(token);
    if (text === undefined) return undefined;
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    const subject = [payload['user'], payload['sub'], payload['user_id']].find((v) => typeof v === 'string');
    if (typeof subject !== 'string' || subject === '') return undefined;
    const at = now();
    return { subject, createdAt: at, expiresAt: at + Math.ceil(this.#settings.cookie.lifetime), data: {} };
  }

  #storeFailed(store: Store, operation: string, err: unknown): never {
    if (!(err instanceof StoreError)) throw err;
    throw new NodeError(
      'SESSION_STORE_ERROR',
      `session store '${store.name}' failed (${operation}): ${err.message}`,
      {
        metadata: { store: store.name, operation, reason: err.code },
        cause: err,
      },
    );
  }
}
