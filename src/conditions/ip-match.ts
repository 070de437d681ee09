import { BlockList } from 'node:net';
import { ipVersion } from '../runtime/ip-version.js';

/** Matches an address against CIDRs and bare addresses, IPv4 and IPv6 (IPv4-mapped IPv6 matches its IPv4 form). */
export type IpMatcher = (address: string) => boolean;

/**
 * Compiles `entries` once; throws `CidrError` naming the bad entry's index.
 *
 * @example
 * const inside = compileIpMatcher(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7']);
 * inside('10.1.2.3'); // true
 */
export function compileIpMatcher(entries: readonly string[]): IpMatcher {
  const list = new BlockList();
  entries.forEach((entry, index) => {
    const slash = entry.indexOf('/');
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = ipVersion(address);
    if (family === 0) throw new CidrError(index, `\`${entry}\` is not an IP address or CIDR`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (slash === -1) {
      list.addAddress(address, type);
      return;
    }
    const prefixText = entry.slice(slash + 1);
    const max = family === 4 ? 32 : 128;
    const prefix = /^[0-9]{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (!(prefix <= max)) throw new CidrError(index, `\`${entry}\` has a prefix length outside 0–${max}`);
    list.addSubnet(address, prefix, type);
  });
  return (candidate) => {
    // A zone index (`fe80::1%eth0`) names an interface, not part of the address.
    const percent = candidate.indexOf('%');
    const address = percent === -1 ? candidate : candidate.slice(0, percent);
    const family = ipVersion(address);
    if (family === 0) return false;
    return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
}

export class CidrError extends Error {
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(message);
    this.name = 'CidrError';
  }
}
