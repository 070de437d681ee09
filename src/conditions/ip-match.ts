/**
 * IP addresses and CIDR lists, for everything that matches client addresses (ip-restriction,
 * real-ip, the `ip_in` condition operators, the debug trigger gate). Lists are parsed once;
 * matching an address is a few integer comparisons (0.9 µs against 3 µs for `net.BlockList`,
 * docs/reference-compatibility.md) and never builds a regex.
 */
import { ConfigError } from '../core/plugin.js';

/** An IPv4 address as one unsigned 32-bit number, an IPv6 address as four. */
export type ParsedIp = { v: 4; n: number } | { v: 6; w: readonly [number, number, number, number] };

interface V4Net {
  net: number;
  mask: number;
}

interface V6Net {
  net: readonly [number, number, number, number];
  mask: readonly [number, number, number, number];
}

/** A precompiled list of addresses and CIDR blocks. */
export interface IpMatcher {
  readonly size: number;
  /** True when `address` (IPv4, IPv6, or IPv4-mapped IPv6) lies in one of the blocks. */
  matches(address: string): boolean;
  matchesParsed(ip: ParsedIp): boolean;
}

/**
 * Parses every entry of `list` (an IP, or IP/prefix) and throws ConfigError at
 * `key[i]` for the first that does not parse.
 */
export function compileIpList(list: readonly string[], key: string): IpMatcher {
  const v4: V4Net[] = [];
  const v6: V6Net[] = [];
  list.forEach((raw, i) => {
    const entry = raw.trim();
    const slash = entry.indexOf('/');
    const addressText = slash === -1 ? entry : entry.slice(0, slash);
    const ip = parseIp(addressText);
    if (ip === null)
      throw new ConfigError(`${key}[${i}]`, `is not a valid IP address or CIDR block: '${raw}'`);
    const max = ip.v === 4 ? 32 : 128;
    let bits = max;
    if (slash !== -1) {
      const prefix = entry.slice(slash + 1);
      bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : -1;
      if (bits < 0 || bits > max) {
        throw new ConfigError(`${key}[${i}]`, `has an invalid prefix length (0-${max}): '${raw}'`);
      }
    }
    if (ip.v === 4) {
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      v4.push({ net: (ip.n & mask) >>> 0, mask });
    } else {
      const mask = v6Mask(bits);
      v6.push({
        net: [
          (ip.w[0] & mask[0]) >>> 0,
          (ip.w[1] & mask[1]) >>> 0,
          (ip.w[2] & mask[2]) >>> 0,
          (ip.w[3] & mask[3]) >>> 0,
        ],
        mask,
      });
    }
  });
  const matchesParsed = (ip: ParsedIp): boolean => {
    if (ip.v === 4) {
      for (const block of v4) if ((ip.n & block.mask) >>> 0 === block.net) return true;
      return false;
    }
    const w = ip.w;
    for (const block of v6) {
      const m = block.mask;
      const n = block.net;
      if (
        (w[0] & m[0]) >>> 0 === n[0] &&
        (w[1] & m[1]) >>> 0 === n[1] &&
        (w[2] & m[2]) >>> 0 === n[2] &&
        (w[3] & m[3]) >>> 0 === n[3]
      ) {
        return true;
      }
    }
    return false;
  };
  return {
    size: v4.length + v6.length,
    matchesParsed,
    matches(address) {
      const ip = parseIp(address);
      return ip !== null && matchesParsed(ip);
    },
  };
}

function v6Mask(bits: number): [number, number, number, number] {
  const out: [number, number, number, number] = [0, 0, 0, 0];
  for (let i = 0; i < 4; i++) {
    const take = Math.max(0, Math.min(32, bits - i * 32));
    out[i] = take === 0 ? 0 : (0xffffffff << (32 - take)) >>> 0;
  }
  return out;
}

/**
 * Parses an IPv4 or IPv6 address (an IPv6 zone `%eth0` is ignored). An
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack socket
 * reports) comes back as IPv4, so IPv4 blocks match it. Null when invalid.
 */
export function parseIp(text: string): ParsedIp | null {
  const n = parseIPv4(text);
  if (n !== -1) return { v: 4, n };
  const w = parseIPv6(text);
  if (w === null) return null;
  if (w[0] === 0 && w[1] === 0 && w[2] === 0xffff) return { v: 4, n: w[3] };
  return { v: 6, w };
}

/** Dotted quad to an unsigned number, or -1. Leading zeros are refused (they read as octal elsewhere). */
export function parseIPv4(text: string): number {
  const len = text.length;
  if (len < 7 || len > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1;
      octet = octet * 10 + (c - 48);
      if (octet > 255) return -1;
      digits++;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

function parseIPv6(input: string): [number, number, number, number] | null {
  let text = input;
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  if (text.length < 2 || text.length > 45 || !text.includes(':')) return null;
  // An embedded IPv4 suffix (`::ffff:192.0.2.1`) is rewritten as its two hex groups.
  const lastColon = text.lastIndexOf(':');
  if (text.indexOf('.', lastColon) !== -1) {
    const v4 = parseIPv4(text.slice(lastColon + 1));
    if (v4 === -1) return null;
    text = `${text.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const double = text.indexOf('::');
  if (double !== -1 && text.indexOf('::', double + 1) !== -1) return null;
  let groups: number[] | null;
  if (double === -1) {
    groups = hexGroups(text);
    if (groups === null || groups.length !== 8) return null;
  } else {
    const head = hexGroups(text.slice(0, double));
    const rest = hexGroups(text.slice(double + 2));
    if (head === null || rest === null || head.length + rest.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
  }
  const g = groups;
  const word = (i: number) => ((g[i]! << 16) | g[i + 1]!) >>> 0;
  return [word(0), word(2), word(4), word(6)];
}

function hexGroups(part: string): number[] | null {
  if (part === '') return [];
  const out: number[] = [];
  for (const g of part.split(':')) {
    if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return null;
    out.push(parseInt(g, 16));
  }
  return out;
}
