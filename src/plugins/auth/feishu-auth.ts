import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { INTERACTIVE_OUTPUTS } from './cas-auth.js';
import { codeExchangeNode, codeExchangeProperties, type CodeExchangeConfig } from './code-exchange.js';
import { asObject, parseJson, ProviderClient, stringField } from './provider-client.js';

interface FeishuAuthConfig extends CodeExchangeConfig {
  app_id: string;
  app_secret: string;
  auth_redirect_uri: string;
}

/**
 * Resolves a Feishu (Lark) login code to the Feishu user: the OAuth 2.0 token
 * endpoint (`authorization_code` grant with the app credentials and
 * `auth_redirect_uri`), then `GET userinfo_url` with the user access token. A
 * code Feishu refuses (`invalid_grant`) is a 401 denial; Feishu unreachable,
 * refusing the app, or answering without a user is a provider failure (502).
 *
 * @example
 * ```yaml
 * - id: login
 *   type: feishu-auth
 *   config:
 *     app_id: ${FEISHU_APP_ID}
 *     app_secret: ${FEISHU_APP_SECRET}
 *     auth_redirect_uri: https://app.example.com/feishu/callback
 * ```
 */
export const feishuAuth = definePlugin({
  type: 'feishu-auth',
  category: 'auth',
  description: 'Authenticate with a Feishu (Lark) login code exchanged for the Feishu user.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['app_id', 'app_secret', 'auth_redirect_uri'],
    properties: {
      app_id: { type: 'string', minLength: 1 },
      app_secret: { type: 'string', minLength: 1 },
      auth_redirect_uri: {
        type: 'string',
        minLength: 1,
        description: 'redirect_uri the code was issued for.',
      },
      ...codeExchangeProperties({
        codeHeader: 'X-Feishu-Code',
        accessTokenUrl: 'https://open.feishu.cn/open-apis/authen/v2/oauth/token',
        userinfoUrl: 'https://open.feishu.cn/open-apis/authen/v1/user_info',
      }),
    },
  },
  outputs: INTERACTIVE_OUTPUTS,
  templated: [],
  create(config: FeishuAuthConfig, env) {
    try {
      new URL(config.auth_redirect_uri);
    } catch {
      throw new ConfigError('auth_redirect_uri', `'${config.auth_redirect_uri}' is not an absolute URL`);
    }
    const client = new ProviderClient({
      code: 'FEISHU_UPSTREAM_ERROR',
      name: 'Feishu',
      timeoutMs: config.timeout,
      sslVerify: config.ssl_verify,
      tls: config.tls,
    });
    const tokenEndpoint = client.endpoint(config.access_token_url, 'access_token_url');
    const userinfoEndpoint = client.endpoint(config.userinfo_url, 'userinfo_url');
    const json = ['content-type', 'application/json; charset=utf-8', 'accept', 'application/json'];

    /** The user access token for `code`, or a denial message. */
    const exchangeCode = async (ctx: Context, code: string): Promise<{ token: string } | string> => {
      const answer = await client.call(ctx.signal, tokenEndpoint, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          grant_type: 'authorization_code',
          client_id: config.app_id,
          client_secret: config.app_secret,
          code,
          redirect_uri: config.auth_redirect_uri,
        }),
      });
      const doc = asObject(parseJson(answer.body));
      if (doc === undefined)
        throw client.failure(`Feishu token endpoint answered ${answer.status}`, tokenEndpoint);
      const raw = doc['code'];
      const feishuCode = typeof raw === 'number' ? raw : undefined;
      const error = stringField(doc, 'error');
      const description =
        stringField(doc, 'error_description') ?? stringField(doc, 'msg') ?? error ?? 'refused';
      // Any non-zero code in a 200 answer is Feishu refusing the code (the reference and APISIX alike).
      const refusedCode = feishuCode !== undefined && feishuCode !== 0 && answer.status === 200;
      if (error === 'invalid_grant' || refusedCode) {
        return `Feishu rejected the code (${String(feishuCode ?? error)}: ${description})`;
      }
      const token = stringField(doc, 'access_token');
      if (answer.status === 200 && (raw === undefined || feishuCode === 0) && token !== undefined) {
        return { token };
      }
      throw client.failure(
        `Feishu token endpoint answered ${answer.status} (${String(feishuCode ?? error ?? 'no token')}: ${description})`,
        tokenEndpoint,
      );
    };

    const userInfo = async (ctx: Context, token: string): Promise<Record<string, unknown>> => {
      const answer = await client.call(ctx.signal, userinfoEndpoint, {
        method: 'GET',
        headers: ['authorization', `Bearer ${token}`, 'accept', 'application/json'],
        body: null,
      });
      const doc = asObject(parseJson(answer.body));
      const data = asObject(doc?.['data']);
      if (answer.status === 200 && doc?.['code'] === 0 && data !== undefined) return data;
      const detail = stringField(doc, 'msg');
      throw client.failure(
        `Feishu user info answered ${answer.status}${detail === undefined ? '' : `: ${detail}`}`,
        userinfoEndpoint,
      );
    };

    try {
      return codeExchangeNode(config, env, {
        type: 'feishu-auth',
        platform: 'Feishu',
        app: config.app_id,
        messageKey: 'feishu_userinfo',
        userIdOf: (info) =>
          stringField(info, 'user_id') ?? stringField(info, 'open_id') ?? stringField(info, 'union_id'),
        resolve: async (ctx, code) => {
          const exchanged = await exchangeCode(ctx, code);
          return typeof exchanged === 'string' ? exchanged : userInfo(ctx, exchanged.token);
        },
        close: () => client.close(),
      });
    } catch (err) {
      // A session config error comes after the pools were leased.
      client.close();
      throw err;
    }
  },
});
