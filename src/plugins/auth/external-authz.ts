import { authzCasdoor } from './authz-casdoor.js';
import { authzKeycloak } from './authz-keycloak.js';
import { dingtalkAuth } from './dingtalk-auth.js';
import { feishuAuth } from './feishu-auth.js';
import { opa } from './opa.js';
import { wolfRbac } from './wolf-rbac.js';

/** Authorization servers and platform logins the gateway calls out to (docs/plugins/README.md). */
export const externalAuthzPlugins = [
  opa,
  authzKeycloak,
  authzCasdoor,
  wolfRbac,
  dingtalkAuth,
  feishuAuth,
] as const;
