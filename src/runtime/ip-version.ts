import { isIPv4, SocketAddress } from 'node:net';

/**
 * 4, 6 or 0, as `net.isIP` answers, without Node's IPv6 pattern: that regular expression is
 * compiled on its first use, which costs 10 ms or more at startup. An IPv6 text is checked by
 * the system's address parser through SocketAddress instead (zone ids such as `fe80::1%eth0`
 * included, as `net.isIP` includes them).
 */
export function ipVersion(text: string): 0 | 4 | 6 {
  if (isIPv4(text)) return 4;
  if (!text.includes(':')) return 0;
  try {
    new SocketAddress({ address: text, family: 'ipv6' });
    return 6;
  } catch {
    return 0;
  }
}
