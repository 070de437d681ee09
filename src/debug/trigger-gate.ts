import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList } from 'node:net';
import { ipVersion } from '../runtime/ip-version.js';
import { parseCidr, type TriggerGateConfig } from '../config/debug-gate.js';

export { debugGateIssues, type TriggerGateConfig } from '../config/debug-gate.js';

/** `debug.allowed_cidrs` when not configured: the documented local workflow (curl on the gateway host). */
export const DEFAULT_DEBUG_ALLOWED_CIDRS: readonly string[] = ['127.0.0.0/8', '::1/128'];

/** Decides whether a request that carries the trigger header may have its trace announced. */
export type TriggerGate = (headerValue: string | string[] | undefined, clientAddress: string) => boolean;

/** `::ffff:127.0.0.1` is the IPv4 client of a dual-stack socket. */
function normalize(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const plain = mapped?.[1] ?? address;
  const version = ipVersion(plain);
  if (version === 0) return undefined;
  return { address: plain, family: version === 4 ? 'ipv4' : 'ipv6' };
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * The trigger-header gate (review L9): the header counts only from a client
 * address inside `debug.allowed_cidrs` (default loopback) and, when
 * `debug.header_secret` is set, only when its value equals the secret
 * (compared in constant time). Anyone else gets no trace headers.
 */
export function createTriggerGate(config: TriggerGateConfig): TriggerGate {
  const list = new BlockList();
  for (const cidr of config.allowed_cidrs ?? DEFAULT_DEBUG_ALLOWED_CIDRS) {
    const parsed = parseCidr(cidr);
    if (parsed !== undefined) list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  const secret = config.header_secret === undefined ? undefined : digest(config.header_secret);
  return (headerValue, clientAddress) => {
    if (headerValue === undefined) return false;
    const client = normalize(clientAddress);
    if (client === undefined || !list.check(client.address, client.family)) return false;
    if (secret === undefined) return true;
    const presented = Array.isArray(headerValue) ? (headerValue[0] ?? '') : headerValue;
    return timingSafeEqual(secret, digest(presented));
  };
}
