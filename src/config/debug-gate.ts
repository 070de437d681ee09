import { ipVersion } from '../runtime/ip-version.js';
import type { ConfigIssue } from './schema-validate.js';

/** system.yaml `debug:` keys that gate trace announcements (docs/debugging.md); the gate itself is src/debug/trigger-gate.ts. */
export interface TriggerGateConfig {
  allowed_cidrs?: readonly string[];
  header_secret?: string;
}

export interface ParsedCidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export function parseCidr(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  const address = (slash === -1 ? text : text.slice(0, slash)).trim();
  const version = ipVersion(address);
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
