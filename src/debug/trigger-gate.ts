import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { ConfigIssue } from '../config/schema-validate.js';

/** `debug.allowed_cidrs` when not configured: the documented local workflow (curl on the gateway host). */
export const DEFAULT_DEBUG_ALLOWED_CIDRS: readonly string[] = ['127.0.0.0/8', '::1/128'];

export interface TriggerGateConfig {
  allowed_cidrs?: readonly string[];
  header_secret?: string;
}

/** Decides whether a request that carries the trigger header may have its trace announced. */
export type TriggerGate = (headerValue: string | string[] | undefined, clientAddress: string) => boolean;

interface ParsedCidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

function parseCidr(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  const address = (slash === -1 ? text : text.slice(0, slash)).trim();
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(max) : text.slice(slash + 1).trim();
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > max) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** Load-time problems of the gate's keys, each naming its path. */
export function debugGateIssues(debug: TriggerGateConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  (debug.allowed_cidrs ?? []).forEach((cidr, i) => {
    if (parseCidr(cidr) === undefined)
      issues.push({
        path: `debug.allowed_cidrs[${i}]`,
        message: `'${cidr}' is not an IP address or CIDR (e.g. 127.0.0.0/8, ::1/128, 10.0.0.5)`,
      });
  });
  if (debug.header_secret !== undefined && debug.header_secret.length < 16)
    issues.push({
      path: 'debug.header_secret',
      message:
        'must be at least 16 characters (an unset variable or a guessable value opens traces to anyone)',
    });
  return issues;
}

/** `::ffff:127.0.0.1` is the IPv4 client of a dual-stack socket. */
function normalize(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const plain = mapped?.[1] ?? address;
  const version = isIP(plain);
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
