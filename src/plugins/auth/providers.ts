import { authzCasbin } from './authz-casbin.js';
import { ldapAuth } from './ldap-auth.js';
import { openidConnect } from './openid-connect/index.js';

/** Auth backed by an identity provider or an embedded policy engine: OpenID Connect, LDAP, Casbin. */
export const providerAuthPlugins = [openidConnect, ldapAuth, authzCasbin] as const;
