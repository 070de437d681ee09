import { createHash, timingSafeEqual } from 'node:crypto';
import { compileIpList } from '../conditions/ip-match.js';
import { parseCidr, type TriggerGateConfig } from '../config/debug-gate.js';

export { debugGateIssues, type TriggerGateConfig } from '../config/debug-gate.js';

/** `debug.allowed_cidrs` when not configured: the documented local workflow (curl on the gateway host). */
export const DEFAULT_DEBUG_ALLOWED_CIDRS: readonly string[] = ['127.0.0.0/8', '::1/128'];

/** Decides whether a request that carries the trigger header may have its trace announced. */
export type TriggerGate = (headerValue: string | string[] | undefined, clientAddress: string) => boolean;

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * The trigger-header gate (review L9): the header counts only from a client
 * address inside `debug.allowed_cidrs` (default loopback) and, when
 * `debug.header_secret` is set, only when its value equals the secret
 * (compared in constant time). Anyone else gets no trace headers.
 */
export function createTriggerGate(config: TriggerGateConfig): TriggerGate {
  // Entries parseCidr refuses were reported at load (debugGateIssues) and are left out here.
  const allowed = (config.allowed_cidrs ?? DEFAULT_DEBUG_ALLOWED_CIDRS).filter(
    (cidr) => parseCidr(cidr) !== undefined,
  );
  const list = compileIpList(allowed, 'debug.allowed_cidrs');
  const secret = config.header_secret === undefined ? undefined : digest(config.header_secret);
  return (headerValue, clientAddress) => {
    if (headerValue === undefined) return false;
    if (!list.matches(clientAddress)) return false;
    if (secret === undefined) return true;
    const presented = Array.isArray(headerValue) ? (headerValue[0] ?? '') : headerValue;
    return timingSafeEqual(secret, digest(presented));
  };
}
