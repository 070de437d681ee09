import { randomBytes } from 'node:crypto';
import { bearerOf, jsonField, startFakeService, type FakeService } from './fake-service.js';

/** The `data` of user_info for one user. */
export interface FeishuUser {
  name: string;
  open_id: string;
  union_id: string;
  user_id?: string;
}

export interface FeishuServer extends FakeService {
  /** `POST /open-apis/authen/v2/oauth/token` */
  readonly accessTokenUrl: string;
  /** `GET /open-apis/authen/v1/user_info` */
  readonly userinfoUrl: string;
  /** Registers a login code issued for `redirectUri` (reusable), as Feishu's authorize page would. */
  issueCode(user: FeishuUser, redirectUri: string, code?: string): string;
  /** Codes that Feishu answers with 20010: the user may not use the app. */
  readonly barred: Set<string>;
  /** Codes Feishu answers with HTTP 200 and this non-zero `code` (older API versions do so). */
  readonly refusedInBody: Map<string, number>;
}

/**
 * Feishu's (Lark's) OAuth 2.0 login: the v2 token endpoint (`POST
 * /open-apis/authen/v2/oauth/token`, JSON `authorization_code` grant with
 * `client_id`, `client_secret`, `code`, `redirect_uri` → `{code:0,
 * access_token, expires_in, token_type, scope}`; RFC 6749 errors with HTTP
 * 400 and Feishu's numeric `code`: 20002 invalid_client, 20003 invalid_grant)
 * and user info (`GET /open-apis/authen/v1/user_info` with the user access
 * token → `{code:0, msg:"success", data:{name, open_id, union_id, …}}`).
 */
export async function startFeishuServer(apps: Record<string, string>): Promise<FeishuServer> {
  const codes = new Map<string, { user: FeishuUser; redirectUri: string }>();
  const tokens = new Map<string, FeishuUser>();
  const barred = new Set<string>();
  const refusedInBody = new Map<string, number>();
  const oauthError = (code: number, error: string, description: string) => ({
    status: 400,
    json: { code, error, error_description: description },
  });
  const service = await startFakeService({
    'POST /open-apis/authen/v2/oauth/token': (call) => {
      const body = call.json ?? {};
      if (body['grant_type'] !== 'authorization_code') {
        return oauthError(20001, 'invalid_request', 'The grant_type is not supported.');
      }
      const app = jsonField(call, 'client_id');
      if (apps[app] === undefined || apps[app] !== body['client_secret']) {
        return oauthError(20002, 'invalid_client', 'The client secret is invalid.');
      }
      const code = jsonField(call, 'code');
      const inBody = refusedInBody.get(code);
      if (inBody !== undefined) return { status: 200, json: { code: inBody, msg: 'invalid code' } };
      if (barred.has(code)) return oauthError(20010, 'invalid_grant', 'The user does not have permission.');
      const grant = codes.get(code);
      if (grant === undefined)
        return oauthError(20003, 'invalid_grant', 'The authorization code is not found.');
      if (grant.redirectUri !== body['redirect_uri']) {
        return oauthError(20003, 'invalid_grant', 'The redirect_uri does not match.');
      }
      const token = `u-${randomBytes(12).toString('hex')}`;
      tokens.set(token, grant.user);
      return {
        status: 200,
        json: {
          code: 0,
          access_token: token,
          expires_in: 7200,
          token_type: 'Bearer',
          scope: 'auth:user.id:read',
        },
      };
    },
    'GET /open-apis/authen/v1/user_info': (call) => {
      const user = tokens.get(bearerOf(call) ?? '');
      if (user === undefined) {
        return { status: 401, json: { code: 99991668, msg: 'Invalid access token for authorization.' } };
      }
      return {
        status: 200,
        json: {
          code: 0,
          msg: 'success',
          data: { ...user, en_name: user.name, avatar_url: 'https://avatar.test/a.png', tenant_key: 't-1' },
        },
      };
    },
  });
  return Object.assign(service, {
    accessTokenUrl: `${service.url}/open-apis/authen/v2/oauth/token`,
    userinfoUrl: `${service.url}/open-apis/authen/v1/user_info`,
    barred,
    refusedInBody,
    issueCode(user: FeishuUser, redirectUri: string, code = randomBytes(8).toString('hex')) {
      codes.set(code, { user, redirectUri });
      return code;
    },
  });
}
