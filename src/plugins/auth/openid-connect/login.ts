import * as oidc from 'openid-client';
import type { Context } from '../../../core/context.js';
import type { Logger } from '../../../core/logger.js';
import { appendSetCookie, sessionCookie, type CookieSettings } from '../../../sessions/cookie.js';
import {
  deleteSession,
  SESSION_ID,
  Sessions,
  type Session,
  type SessionSettings,
} from '../../../sessions/index.js';
import { Sealer } from '../../../sessions/sealer.js';
import { checkClaims, type ClaimRules } from './claims.js';
import { denied, redirect } from './respond.js';
import { TokenRejected, type OidcProvider, type TokenSet } from './provider.js';

export type LoginPort = 'success' | 'denied' | 'redirect';

export interface LoginSettings {
  clientId: string;
  /** Client and provider a session belongs to: a session of another node with the same secret does not open. */
  relyingParty: string;
  scope: string;
  /** `redirect_uri` when absolute; undefined when it is a path on the request's own host. */
  redirectUri: string | undefined;
  /** Path of `redirect_uri`: a request there with `code` or `error` is the callback. */
  callbackPath: string;
  logoutPath: string | undefined;
  postLogoutRedirect: string;
  /** Refresh expired access tokens (kvstore sessions only). */
  refresh: boolean;
  /** Keep the access token in the session, to forward it. */
  keepAccessToken: boolean;
  claimRules: ClaimRules;
}

/** What the session seals besides its subject (a type alias: it must fit the sessions' record type). */
type SessionData = {
  relyingParty: string;
  claims: Record<string, unknown>;
  accessToken?: string;
  /** Unix seconds. */
  accessExpiresAt?: number;
  refreshToken?: string;
};

/** The transient state of one login, sealed into `<cookie>_flow` across the trip to the provider. */
interface FlowState {
  state: string;
  nonce: string;
  verifier: string;
  /** Where the browser was going (path and query on this host). */
  returnTo: string;
  redirectUri: string;
  /** Unix seconds. */
  exp: number;
}

/** A login must come back within this many seconds. */
const FLOW_LIFETIME = 600;
/** Refresh a little before the access token actually expires. */
const REFRESH_SKEW = 5;
const FLOW_CONTEXT = 'openid-connect|flow';

const now = (): number => Math.floor(Date.now() / 1000);

/**
 * Interactive login: the authorization code flow with PKCE (S256), `state`
 * and `nonce` (the protocol by openid-client, see provider.ts), ending in a
 * session kept by src/sessions (sealed cookie or kvstore). Order per request:
 * logout path, callback, session, login redirect.
 */
export class LoginFlow {
  readonly #settings: LoginSettings;
  readonly #provider: OidcProvider;
  readonly #sessions: Sessions;
  readonly #session: SessionSettings;
  readonly #flowSealer: Sealer;
  readonly #flowCookie: CookieSettings;
  readonly #attach: (ctx: Context, claims: Record<string, unknown>, accessToken: string | undefined) => void;
  readonly #logger: Logger;

  constructor(
    settings: LoginSettings,
    provider: OidcProvider,
    session: SessionSettings,
    attach: (ctx: Context, claims: Record<string, unknown>, accessToken: string | undefined) => void,
    logger: Logger,
  ) {
    this.#settings = settings;
    this.#provider = provider;
    this.#session = session;
    this.#sessions = new Sessions(session, 'openid-connect');
    this.#flowSealer = new Sealer(session.secret, 'login-flow');
    this.#flowCookie = { ...session.cookie, name: `${session.cookie.name}_flow`, lifetime: FLOW_LIFETIME };
    this.#attach = attach;
    this.#logger = logger;
  }

  run(ctx: Context): LoginPort | Promise<LoginPort> {
    const { path, query } = ctx.request;
    if (this.#settings.logoutPath === path) return this.#logout(ctx);
    if (path === this.#settings.callbackPath && (query.has('code') || query.has('error'))) {
      return this.#callback(ctx);
    }
    const session = this.#sessions.open(ctx);
    return session instanceof Promise
      ? session.then((found) => this.#resume(ctx, found))
      : this.#resume(ctx, session);
  }

  #resume(ctx: Context, session: Session | undefined): LoginPort | Promise<LoginPort> {
    const data = session === undefined ? undefined : sessionData(session.data, this.#settings.relyingParty);
    if (data === undefined) return this.#login(ctx);
    const { accessToken, accessExpiresAt, refreshToken } = data;
    if (
      this.#settings.refresh &&
      refreshToken !== undefined &&
      accessExpiresAt !== undefined &&
      accessExpiresAt <= now() + REFRESH_SKEW
    ) {
      return this.#refresh(ctx, session as Session, data, refreshToken);
    }
    this.#attach(ctx, data.claims, accessToken);
    return 'success';
  }

  /** No session: remember where the browser was going and send it to the provider. */
  async #login(ctx: Context): Promise<'redirect'> {
    const flow: FlowState = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      returnTo: ctx.request.url,
      redirectUri: this.#redirectUri(ctx),
      exp: now() + FLOW_LIFETIME,
    };
    const target = await this.#provider.authorizationUrl(flow.redirectUri, this.#settings.scope, flow);
    const sealed = this.#flowSealer.seal(JSON.stringify(flow), FLOW_CONTEXT);
    appendSetCookie(ctx, sessionCookie(ctx, this.#flowCookie, sealed));
    return redirect(ctx, target);
  }

  /** The provider sent the browser back: check state, redeem the code and verify the id_token (openid-client), open a session. */
  async #callback(ctx: Context): Promise<LoginPort> {
    const query = ctx.request.query;
    const flow = this.#readFlow(ctx);
    // Single use: the flow cookie goes whatever the outcome.
    appendSetCookie(ctx, sessionCookie(ctx, this.#flowCookie, '', 0));
    const error = query.get('error')?.[0];
    if (error !== undefined) {
      const description = query.get('error_description')?.[0];
      return denied(
        ctx,
        `login refused by the identity provider: ${error}${description ? ` (${description})` : ''}`,
      );
    }
    if (flow === undefined) return denied(ctx, 'missing or invalid login flow cookie');
    if (query.get('state')?.[0] !== flow.state) return denied(ctx, 'login state does not match');
    const code = query.get('code')?.[0] ?? '';
    if (code === '') return denied(ctx, 'callback without an authorization code');

    // The redirect URI exactly as sent in the authorization request, with the callback's query.
    const callback = new URL(flow.redirectUri);
    for (const [name, values] of query) for (const value of values) callback.searchParams.append(name, value);
    let tokens: TokenSet;
    let claims: Record<string, unknown>;
    try {
      ({ tokens, claims } = await this.#provider.exchangeCode(callback, flow, ctx.signal));
      checkClaims(claims, this.#settings.claimRules);
    } catch (err) {
      if (err instanceof TokenRejected) return denied(ctx, `id_token rejected: ${err.message}`);
      throw err;
    }
    const sub = claims['sub'];
    if (typeof sub !== 'string' || sub === '') return denied(ctx, 'id_token has no subject');

    await this.#sessions.establish(ctx, sub, this.#sealable(claims, tokens, undefined));
    return redirect(ctx, flow.returnTo);
  }

  async #logout(ctx: Context): Promise<'redirect'> {
    await this.#sessions.end(ctx);
    return redirect(ctx, this.#settings.postLogoutRedirect);
  }

  /** kvstore session with an expired access token: refresh it, or end the session when the grant is dead. */
  async #refresh(
    ctx: Context,
    session: Session,
    data: SessionData,
    refreshToken: string,
  ): Promise<LoginPort> {
    const tokens = await this.#provider.refresh(refreshToken, ctx.signal);
    if (tokens === undefined) {
      await this.#sessions.end(ctx);
      return this.#login(ctx);
    }
    const previous = ctx.request.cookies.get(this.#session.cookie.name);
    const renewed = this.#sealable(data.claims, tokens, refreshToken);
    // A new session id per refresh: the old record goes, so a stolen old cookie dies with it.
    await this.#sessions.establish(ctx, session.subject, renewed);
    const store = this.#session.store;
    if (store !== undefined && previous !== undefined && SESSION_ID.test(previous)) {
      deleteSession(store, previous).catch((err: unknown) =>
        this.#logger.warn(
          { err, store: store.name },
          'openid-connect: could not delete the refreshed session',
        ),
      );
    }
    this.#attach(ctx, renewed.claims, renewed.accessToken);
    return 'success';
  }

  #sealable(claims: Record<string, unknown>, tokens: TokenSet, oldRefresh: string | undefined): SessionData {
    const data: SessionData = { relyingParty: this.#settings.relyingParty, claims };
    if (this.#settings.keepAccessToken && tokens.accessToken !== undefined) {
      data.accessToken = tokens.accessToken;
      if (tokens.accessExpiresAt !== undefined) data.accessExpiresAt = tokens.accessExpiresAt;
    }
    const refresh = tokens.refreshToken ?? oldRefresh;
    if (this.#settings.refresh && refresh !== undefined) data.refreshToken = refresh;
    return data;
  }

  #redirectUri(ctx: Context): string {
    return new URL(
      this.#settings.redirectUri ??
        `${ctx.request.scheme}://${ctx.request.host}${this.#settings.callbackPath}`,
    ).href;
  }

  #readFlow(ctx: Context): FlowState | undefined {
    const value = ctx.request.cookies.get(this.#flowCookie.name);
    if (value === undefined || value === '') return undefined;
    const text = this.#flowSealer.open(value, FLOW_CONTEXT);
    if (text === undefined) return undefined;
    try {
      const flow = JSON.parse(text) as FlowState;
      return typeof flow.state === 'string' && typeof flow.exp === 'number' && flow.exp > now()
        ? flow
        : undefined;
    } catch {
      return undefined;
    }
  }
}

function sessionData(raw: Record<string, unknown>, relyingParty: string): SessionData | undefined {
  const claims = raw['claims'];
  if (raw['relyingParty'] !== relyingParty) return undefined;
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) return undefined;
  const data: SessionData = { relyingParty, claims: claims as Record<string, unknown> };
  if (typeof raw['accessToken'] === 'string') data.accessToken = raw['accessToken'];
  if (typeof raw['accessExpiresAt'] === 'number') data.accessExpiresAt = raw['accessExpiresAt'];
  if (typeof raw['refreshToken'] === 'string') data.refreshToken = raw['refreshToken'];
  return data;
}
