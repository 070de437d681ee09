import { definePlugin } from '../../core/plugin.js';
import { compileIpList, parseIp } from '../../conditions/ip-match.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

const DENIED = { error: 'forbidden', message: 'IP address denied' } as const;
const NOT_ALLOWED = { error: 'forbidden', message: 'IP address not allowed' } as const;

/**
 * Allows or denies by the client address (`client.ip`, as rewritten by an
 * earlier `real-ip`). Deny wins over allow; a non-empty allow list admits only
 * its members. Lists are parsed into integer blocks at load.
 */
export const ipRestriction = definePlugin({
  type: 'ip-restriction',
  readsRequestBody: configReadsRequestBody,
  category: 'security',
  description: 'Allow or deny requests by client IP address or CIDR block.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      allow: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description: 'IPs or CIDR blocks admitted; when non-empty, every other address is denied.',
      },
      deny: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description: 'IPs or CIDR blocks always denied; wins over allow.',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: [],
  readsResponseBody: () => false,
  create(config) {
    const allow = compileIpList(config.allow, 'allow');
    const deny = compileIpList(config.deny, 'deny');
    const restrictive = allow.size > 0;
    return {
      run(ctx) {
        const ip = parseIp(ctx.request.remoteAddress);
        if (ip !== null && deny.size > 0 && deny.matchesParsed(ip)) {
          ctx.response.json(403, DENIED);
          return 'denied';
        }
        if (restrictive && (ip === null || !allow.matchesParsed(ip))) {
          ctx.response.json(403, NOT_ALLOWED);
          return 'denied';
        }
        return 'success';
      },
    };
  },
});
