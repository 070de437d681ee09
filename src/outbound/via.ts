import { randomBytes } from 'node:crypto';

/**
 * This gateway process's identity in `Via` (RFC 9110 §7.6.3). Every request it
 * proxies upstream carries `1.1 switchyard-<id>`; a request that comes back
 * carrying that entry `listener.max_hops` times is a loop and gets 508.
 * Random per process: another gateway instance (another id) is never mistaken
 * for this one, and a client can only trigger 508 by sending this exact id.
 */
export const GATEWAY_ID = randomBytes(6).toString('hex');

/** The received-protocol and pseudonym this gateway appends to `Via`. */
export const VIA_ENTRY = `1.1 switchyard-${GATEWAY_ID}`;

/** The `Via` value sent upstream: the client's (joined) plus ours. */
export function appendVia(prior: string | string[] | undefined): string {
  if (prior === undefined || prior.length === 0) return VIA_ENTRY;
  return `${typeof prior === 'string' ? prior : prior.join(', ')}, ${VIA_ENTRY}`;
}

/** How many times `Via` already names this gateway, counting no further than `limit`. */
export function timesSeen(via: string | string[], limit: number): number {
  const value = typeof via === 'string' ? via : via.join(', ');
  let count = 0;
  for (let at = value.indexOf(VIA_ENTRY); at !== -1 && count < limit; at = value.indexOf(VIA_ENTRY, at + 1)) {
    count++;
  }
  return count;
}
