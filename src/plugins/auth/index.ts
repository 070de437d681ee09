import { acl } from './acl.js';
import { attachConsumerLabel } from './attach-consumer-label.js';
import { basicAuth } from './basic-auth.js';
import { casAuth } from './cas-auth.js';
import { consumerRestriction } from './consumer-restriction.js';
import { externalAuthzPlugins } from './external-authz.js';
import { forwardAuth } from './forward-auth.js';
import { hmacAuth } from './hmac-auth.js';
import { jweDecrypt } from './jwe-decrypt.js';
import { jwtAuth } from './jwt-auth.js';
import { keyAuth } from './key-auth.js';
import { multiAuth } from './multi-auth.js';
import { providerAuthPlugins } from './providers.js';

/** The auth family: credential auth, consumer rules and external authorization. */
export const authPlugins = [
  keyAuth,
  basicAuth,
  jwtAuth,
  jweDecrypt,
  hmacAuth,
  multiAuth,
  acl,
  consumerRestriction,
  attachConsumerLabel,
  forwardAuth,
  ...externalAuthzPlugins,
  ...providerAuthPlugins,
  casAuth,
] as const;
