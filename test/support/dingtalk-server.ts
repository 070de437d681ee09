import { randomBytes } from 'node:crypto';
import { jsonField, startFakeService, type FakeService } from './fake-service.js';

/** The `result` of getuserinfo for one user. */
export interface DingtalkUser {
  userid: string;
  unionid: string;
  name: string;
}

export interface DingtalkServer extends FakeService {
  /** `POST` app access tokens: `/v1.0/oauth2/accessToken` (api.dingtalk.com). */
  readonly accessTokenUrl: string;
  /** `POST` user info by login code: `/topapi/v2/user/getuserinfo` (oapi.dingtalk.com). */
  readonly userinfoUrl: string;
  /** Registers a login code (reusable until `forget`), as DingTalk's login page hands one out. */
  issueCode(user: DingtalkUser, code?: string): string;
  /** Invalidates every app access token issued so far (as when DingTalk rotates them). */
  expireTokens(): void;
}

/**
 * DingTalk's two login APIs on one server: the app access token
 * (`POST /v1.0/oauth2/accessToken` with `{appKey, appSecret}` →
 * `{accessToken, expireIn}`, `400 {code:"invalidClientIdOrSecret"}`) and the
 * code lookup (`POST /topapi/v2/user/getuserinfo?access_token=…` with
 * `{code}` → `{errcode:0, errmsg:"ok", result:{userid, unionid, name, …}}`;
 * errcode 40014 for an unknown access token and 40078 for an unknown code,
 * both with HTTP 200 as DingTalk does).
 */
export async function startDingtalkServer(apps: Record<string, string>): Promise<DingtalkServer> {
  const tokens = new Set<string>();
  const codes = new Map<string, DingtalkUser>();
  const requestId = (): string => randomBytes(6).toString('hex');
  const service = await startFakeService({
    'POST /v1.0/oauth2/accessToken': (call) => {
      const key = jsonField(call, 'appKey');
      if (apps[key] === undefined || apps[key] !== call.json?.['appSecret']) {
        return {
          status: 400,
          json: {
            requestid: requestId(),
            code: 'invalidClientIdOrSecret',
            message: '无效的clientId或者clientSecret',
          },
        };
      }
      const accessToken = randomBytes(16).toString('hex');
      tokens.add(accessToken);
      return { status: 200, json: { accessToken, expireIn: 7200 } };
    },
    'POST /topapi/v2/user/getuserinfo': (call) => {
      if (!tokens.has(call.query.get('access_token') ?? '')) {
        return {
          status: 200,
          json: { errcode: 40014, errmsg: '不合法的access_token', request_id: requestId() },
        };
      }
      const user = codes.get(jsonField(call, 'code'));
      if (user === undefined) {
        return {
          status: 200,
          json: { errcode: 40078, errmsg: '不存在的临时授权码', request_id: requestId() },
        };
      }
      return {
        status: 200,
        json: {
          errcode: 0,
          errmsg: 'ok',
          result: { ...user, device_id: 'd-1', sys: false, sys_level: 0, associated_unionid: '' },
          request_id: requestId(),
        },
      };
    },
  });
  return Object.assign(service, {
    accessTokenUrl: `${service.url}/v1.0/oauth2/accessToken`,
    userinfoUrl: `${service.url}/topapi/v2/user/getuserinfo`,
    issueCode(user: DingtalkUser, code = randomBytes(8).toString('hex')) {
      codes.set(code, user);
      return code;
    },
    expireTokens() {
      tokens.clear();
    },
  });
}
