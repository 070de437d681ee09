import type { Context } from '../../core/context.js';
import type { NodeError } from '../../core/errors.js';
import { definePlugin } from '../../core/plugin.js';
import { INTERACTIVE_OUTPUTS } from './cas-auth.js';
import { codeExchangeNode, codeExchangeProperties, type CodeExchangeConfig } from './code-exchange.js';
import {
  asObject,
  parseJson,
  ProviderClient,
  stringField,
  type ProviderEndpoint,
} from './provider-client.js';

interface DingtalkAuthConfig extends CodeExchangeConfig {
  app_key: string;
  app_secret: string;
}

/** getuserinfo errcodes that blame the app access token, not the user's code: fetch a new token. */
const STALE_TOKEN = new Set([40001, 40014, 42001]);
/** errcodes that say DingTalk itself could not answer (system busy, rate limited). */
const UNAVAILABLE = new Set([-1, 88, 90018]);
/** Renew the app token this long before DingTalk says it expires. */
const TOKEN_MARGIN_MS = 200_000;

interface AppToken {
  value: string;
  expiresAt: number;
}

/**
 * Resolves a DingTalk login code to the DingTalk user: an app access token
 * (`POST access_token_url` with appKey/appSecret, cached until shortly before
 * it expires) and `POST userinfo_url?access_token=…` with `{code}`. A code
 * DingTalk does not know is a 401 denial; DingTalk unreachable, refusing the
 * app credentials or answering nonsense is a provider failure (502).
 *
 * @example
 * ```yaml
 * - id: login
 *   type: dingtalk-auth
 *   config:
 *     app_key: ${DINGTALK_APP_KEY}
 *     app_secret: ${DINGTALK_APP_SECRET}
 * ```
 */
export const dingtalkAuth = definePlugin({
  type: 'dingtalk-auth',
  category: 'auth',
  description: 'Authenticate with a DingTalk login code exchanged for the DingTalk user.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['app_key', 'app_secret'],
    properties: {
      app_key: { type: 'string', minLength: 1 },
      app_secret: { type: 'string', minLength: 1 },
      ...codeExchangeProperties({
        codeHeader: 'X-DingTalk-Code',
        accessTokenUrl: 'https://api.dingtalk.com/v1.0/oauth2/accessToken',
        userinfoUrl: 'https://oapi.dingtalk.com/topapi/v2/user/getuserinfo',
      }),
    },
  },
  outputs: INTERACTIVE_OUTPUTS,
  templated: [],
  create(config: DingtalkAuthConfig, env) {
    const client = new ProviderClient({
      code: 'DINGTALK_UPSTREAM_ERROR',
      name: 'DingTalk',
      timeoutMs: config.timeout,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const tokenEndpoint = client.endpoint(config.access_token_url, 'access_token_url');
    const userinfoEndpoint = client.endpoint(config.userinfo_url, 'userinfo_url');
    const userinfoPath = `${userinfoEndpoint.path}${userinfoEndpoint.url.search === '' ? '?' : '&'}access_token=`;
    const credentials = JSON.stringify({ appKey: config.app_key, appSecret: config.app_secret });
    const json = ['content-type', 'application/json', 'accept', 'application/json'];
    let cached: AppToken | undefined;
    // One fetch at a time, shared by the requests waiting for it; not tied to any one client.
    let pending: Promise<AppToken> | undefined;

    const fetchToken = async (): Promise<AppToken> => {
      const answer = await client.call(null, tokenEndpoint, {
        method: 'POST',
        headers: json,
        body: credentials,
      });
      const doc = parseJson(answer.body);
      const value = stringField(doc, 'accessToken');
      if (answer.status !== 200 || value === undefined) {
        throw failure(tokenEndpoint, 'app access token', answer.status, doc);
      }
      const expireIn = asObject(doc)?.['expireIn'];
      const lifetimeMs = (typeof expireIn === 'number' && expireIn > 0 ? expireIn : 7200) * 1000;
      return { value, expiresAt: Date.now() + Math.max(lifetimeMs - TOKEN_MARGIN_MS, lifetimeMs / 2) };
    };

    const appToken = (): Promise<AppToken> => {
      if (cached !== undefined && cached.expiresAt > Date.now()) return Promise.resolve(cached);
      pending ??= fetchToken().then(
        (token) => {
          cached = token;
          pending = undefined;
          return token;
        },
        (err: unknown) => {
          pending = undefined;
          throw err;
        },
      );
      return pending;
    };

    const failure = (endpoint: ProviderEndpoint, what: string, status: number, doc: unknown): NodeError => {
      const detail = stringField(doc, 'message') ?? stringField(doc, 'errmsg') ?? stringField(doc, 'code');
      const suffix = detail === undefined ? '' : `: ${detail}`;
      return client.failure(`DingTalk ${what} request answered ${status}${suffix}`, endpoint);
    };

    /** The user info object for `code`, or a denial message. */
    const lookup = async (
      ctx: Context,
      code: string,
      retry: boolean,
    ): Promise<Record<string, unknown> | string> => {
      const token = await appToken();
      const answer = await client.call(ctx.signal, userinfoEndpoint, {
        method: 'POST',
        path: `${userinfoPath}${encodeURIComponent(token.value)}`,
        headers: json,
        body: JSON.stringify({ code }),
      });
      const doc = asObject(parseJson(answer.body));
      const errcode = doc?.['errcode'];
      if (answer.status !== 200 || doc === undefined || typeof errcode !== 'number') {
        throw failure(userinfoEndpoint, 'user info', answer.status, doc);
      }
      if (errcode === 0) {
        const result = asObject(doc['result']);
        if (result === undefined)
          throw client.failure('DingTalk user info answer has no result', userinfoEndpoint);
        return result;
      }
      const errmsg = stringField(doc, 'errmsg') ?? 'unknown error';
      if (STALE_TOKEN.has(errcode)) {
        if (cached?.value === token.value) cached = undefined;
        if (retry) return lookup(ctx, code, false);
      }
      if (STALE_TOKEN.has(errcode) || UNAVAILABLE.has(errcode)) {
        throw client.failure(`DingTalk user info failed (errcode ${errcode}: ${errmsg})`, userinfoEndpoint);
      }
      return `DingTalk rejected the code (errcode ${errcode}: ${errmsg})`;
    };

    try {
      return codeExchangeNode(config, env, {
        type: 'dingtalk-auth',
        platform: 'DingTalk',
        app: config.app_key,
        messageKey: 'dingtalk_userinfo',
        userIdOf: (info) => stringField(info, 'userid') ?? stringField(info, 'unionid'),
        resolve: (ctx, code) => lookup(ctx, code, true),
        close: () => client.close(),
      });
    } catch (err) {
      // A session config error comes after the pools were leased.
      client.close();
      throw err;
    }
  },
});
