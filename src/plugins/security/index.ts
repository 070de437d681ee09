import { cors } from './cors.js';
import { csrf } from './csrf.js';
import { dataMask } from './data-mask.js';
import { ipRestriction } from './ip-restriction.js';
import { oasValidator } from './oas-validator.js';
import { refererRestriction } from './referer-restriction.js';
import { requestSizeLimit } from './request-size-limit.js';
import { requestValidation } from './request-validation.js';
import { uaRestriction } from './ua-restriction.js';
import { uriBlocker } from './uri-blocker.js';

/** The security and request-shape family: CORS, access restrictions, CSRF, size limits, validation, data masking. */
export const securityPlugins = [
  cors,
  ipRestriction,
  uaRestriction,
  refererRestriction,
  uriBlocker,
  csrf,
  requestSizeLimit,
  requestValidation,
  oasValidator,
  dataMask,
] as const;
