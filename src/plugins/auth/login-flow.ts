import { randomBytes } from 'node:crypto';
import type { Context } from '../../core/context.js';
import { appendSetCookie, sessionCookie, type CookieSettings } from '../../sessions/cookie.js';
import { Sealer, type SecretList } from '../../sessions/sealer.js';

/** A login round trip in progress: the anti-CSRF state and where the browser goes afterwards. */
export interface LoginFlow {
  state: string;
  /** Path plus query on this gateway, always starting with a single `/`. */
  returnTo: string;
}

interface Payload {
  s: string;
  r: string;
  exp: number;
}

/** How long a browser may take at the provider's login page. */
const FLOW_LIFETIME = 300;

/**
 * The short-lived `<cookie>_flow` cookie of an OAuth login: sealed with the
 * session secret (bound to the plugin), it carries the `state` sent to the
 * provider and the page to return to, so the callback can check the one and
 * restore the other without any server-side state.
 */
export class LoginFlows {
  readonly #sealer: Sealer;
  readonly #context: string;
  readonly #cookie: CookieSettings;

  constructor(secret: SecretList, plugin: string, sessionCookie: CookieSettings) {
    this.#sealer = new Sealer(secret, 'login-flow');
    this.#context = `${plugin}|flow`;
    this.#cookie = { name: `${sessionCookie.name}_flow`, path: sessionCookie.path, lifetime: FLOW_LIFETIME };
  }

  /** Starts a flow: sets the flow cookie on the prepared response and returns the new `state`. */
  begin(ctx: Context, returnTo: string): string {
    const state = randomBytes(16).toString('hex');
    const payload: Payload = { s: state, r: safeReturn(returnTo), exp: now() + FLOW_LIFETIME };
    const sealed = this.#sealer.seal(JSON.stringify(payload), this.#context);
    appendSetCookie(ctx, sessionCookie(ctx, this.#cookie, sealed));
    return state;
  }

  /** The request's flow, if its cookie opens and has not expired; the cookie is cleared either way. */
  take(ctx: Context): LoginFlow | undefined {
    const value = ctx.request.cookies.get(this.#cookie.name);
    if (value === undefined) return undefined;
    appendSetCookie(ctx, sessionCookie(ctx, this.#cookie, '', 0));
    const text = this.#sealer.open(value, this.#context);
    if (text === undefined) return undefined;
    try {
      const payload = JSON.parse(text) as Partial<Payload>;
      if (typeof payload.s !== 'string' || typeof payload.r !== 'string') return undefined;
      if (typeof payload.exp !== 'number' || payload.exp <= now()) return undefined;
      return { state: payload.s, returnTo: safeReturn(payload.r) };
    } catch {
      return undefined;
    }
  }
}

const now = (): number => Math.floor(Date.now() / 1000);

/** Only a local path: `//host` or a scheme would turn the callback into an open redirect. */
function safeReturn(target: string): string {
  return target.startsWith('/') && !target.startsWith('//') && !target.startsWith('/\\') ? target : '/';
}
