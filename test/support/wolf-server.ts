import { startFakeService, type FakeService } from './fake-service.js';

export interface WolfUser {
  id: number;
  username: string;
  nickname: string;
}

/** Decides one access check: the user, `appID`, `action` (method) and `resName` (path). */
export type WolfRule = (user: WolfUser, appID: string, action: string, resName: string) => boolean;

export interface WolfServer extends FakeService {
  /** Logs `user` into `appID` and returns the wolf token (`rbac_token` is then `V1#<appID>#<token>`). */
  login(user: WolfUser, appID: string): string;
}

/**
 * wolf-server's `GET /wolf/rbac/access_check?appID=&resName=&action=&clientIP=`
 * with the wolf token in `x-rbac-token`: `200 {"ok":true,"reason":"","data":
 * {"userInfo":{…}}}` when the rule allows, `401 {"ok":false,"reason":
 * "ERR_ACCESS_DENIED","data":{"userInfo":{…}}}` when it does not, `401
 * {"ok":false,"reason":"ERR_TOKEN_INVALID"}` for a token it does not know (or
 * one issued for another app).
 */
export async function startWolfServer(rule: WolfRule): Promise<WolfServer> {
  const sessions = new Map<string, { user: WolfUser; appID: string }>();
  let issued = 0;
  const service = await startFakeService({
    'GET /wolf/rbac/access_check': (call) => {
      const q = call.query;
      const appID = q.get('appID') ?? '';
      const session = sessions.get(String(call.headers['x-rbac-token'] ?? ''));
      if (session === undefined || session.appID !== appID) {
        return { status: 401, json: { ok: false, reason: 'ERR_TOKEN_INVALID' } };
      }
      const userInfo = { ...session.user, email: `${session.user.username}@wolf.test`, appIDs: [appID] };
      if (!rule(session.user, appID, q.get('action') ?? '', q.get('resName') ?? '')) {
        return { status: 401, json: { ok: false, reason: 'ERR_ACCESS_DENIED', data: { userInfo } } };
      }
      return { status: 200, json: { ok: true, reason: '', data: { userInfo } } };
    },
  });
  return Object.assign(service, {
    login(user: WolfUser, appID: string) {
      const token = `wolf-${++issued}`;
      sessions.set(token, { user, appID });
      return token;
    },
  });
}
