import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { compileIpList, parseIp, type IpMatcher } from '../../conditions/ip-match.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type SourceReader = (ctx: Context) => string | undefined;

/** Resolves a variable name (`http_*`, `arg_*`, `cookie_*`) to a reader, once at load. */
function sourceReader(source: string): SourceReader {
  const cut = (prefix: string) => source.slice(prefix.length);
  if (source.startsWith('http_') && source.length > 5) {
    const header = cut('http_').toLowerCase().replaceAll('_', '-');
    return (ctx) => ctx.request.header(header);
  }
  if (source.startsWith('arg_') && source.length > 4) {
    const name = cut('arg_');
    return (ctx) => ctx.request.query.get(name)?.[0];
  }
  if (source.startsWith('cookie_') && source.length > 7) {
    const name = cut('cookie_');
    return (ctx) => ctx.request.cookies.get(name);
  }
  throw new ConfigError(
    'source',
    `must be a variable such as http_x_real_ip, arg_realip or cookie_ip: '${source}'`,
  );
}

/** `ip`, `ip:port`, `[v6]` or `[v6]:port`; undefined when it holds no valid address (or port 0). */
export function parseAddress(text: string): { ip: string; port?: number } | undefined {
  const value = text.trim();
  if (value.charCodeAt(0) !== 91 /* [ */ && parseIp(value) !== null) return { ip: value };
  let ip: string;
  let port: string | undefined;
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close === -1) return undefined;
    ip = value.slice(1, close);
    const rest = value.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      port = rest.slice(1);
    }
  } else {
    const colon = value.lastIndexOf(':');
    // An unbracketed IPv6 address with a port is ambiguous.
    if (colon === -1 || value.indexOf(':') !== colon) return undefined;
    ip = value.slice(0, colon);
    port = value.slice(colon + 1);
  }
  if (parseIp(ip) === null) return undefined;
  if (port === undefined) return { ip };
  const n = /^\d{1,5}$/.test(port) ? Number(port) : 0;
  return n > 0 && n < 65536 ? { ip, port: n } : undefined;
}

/**
 * Replaces the client address (`client.ip`, `$remote_addr`) with the one a
 * trusted proxy reports in a header, query argument or cookie.
 * `http_x_forwarded_for` is read as a list: its last hop, or with `recursive`
 * the first hop from the right that is not a trusted proxy.
 */
export const realIp = definePlugin({
  type: 'real-ip',
  readsRequestBody: configReadsRequestBody,
  category: 'core',
  description:
    'Replace the client address with the one a trusted proxy reports (X-Forwarded-For, X-Real-IP, …).',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['source'],
    properties: {
      source: {
        type: 'string',
        minLength: 1,
        description: 'Variable holding the address: http_<header>, arg_<query>, cookie_<name>.',
      },
      trusted_addresses: {
        type: 'array',
        items: { type: 'string' },
        description:
          'IPs or CIDR blocks of trusted proxies; only their requests are rewritten. Unset = always.',
      },
      recursive: {
        type: 'boolean',
        default: false,
        description: 'X-Forwarded-For: skip trusted hops from the right instead of taking the last entry.',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: [],
  readsResponseBody: () => false,
  create(config) {
    let trusted: IpMatcher | undefined;
    if (config.trusted_addresses !== undefined) {
      if (config.trusted_addresses.length === 0) {
        throw new ConfigError(
          'trusted_addresses',
          'must list at least one IP or CIDR block (omit it to always rewrite)',
        );
      }
      trusted = compileIpList(config.trusted_addresses, 'trusted_addresses');
    }
    const forwardedFor = config.source.toLowerCase() === 'http_x_forwarded_for';
    const read = forwardedFor ? undefined : sourceReader(config.source);
    const recursive = config.recursive && trusted !== undefined;

    const fromForwardedFor = (ctx: Context): string | undefined => {
      const raw = ctx.request.headers['x-forwarded-for'];
      const value = typeof raw === 'string' ? raw : raw?.[raw.length - 1];
      if (value === undefined) return undefined;
      if (!value.includes(',')) return value;
      const hops = value.split(',');
      if (recursive) {
        for (let i = hops.length - 1; i > 0; i--) {
          const hop = hops[i]!.trim();
          if (!trusted!.matches(hop)) return hop;
        }
        return hops[0];
      }
      return hops[hops.length - 1];
    };

    return {
      run(ctx) {
        const req = ctx.request;
        if (trusted !== undefined && !trusted.matches(req.remoteAddress)) return 'success';
        const candidate = read === undefined ? fromForwardedFor(ctx) : read(ctx);
        if (candidate === undefined || candidate === '') return 'success';
        const address = parseAddress(candidate);
        if (address === undefined) return 'success';
        req.remoteAddress = address.ip;
        if (address.port !== undefined) req.remotePort = address.port;
        return 'success';
      },
    };
  },
});
