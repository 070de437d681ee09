import { ConfigError, definePlugin } from '../../core/plugin.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { RESTRICTION_OUTPUTS } from '../auth/shared.js';

/** Exact hosts plus `*`-prefixed suffixes (`*.example.com` keeps `.example.com`). */
interface HostMatcher {
  exact: Set<string>;
  suffixes: string[];
}

const HOST_PATTERN = /^\*?[0-9A-Za-z._\-[\]:]+$/;

function compileHosts(list: readonly string[], key: string): HostMatcher {
  const matcher: HostMatcher = { exact: new Set(), suffixes: [] };
  list.forEach((pattern, i) => {
    if (!HOST_PATTERN.test(pattern) || pattern === '*') {
      throw new ConfigError(`${key}[${i}]`, `must be a host like example.com or *.example.com: '${pattern}'`);
    }
    const lower = pattern.toLowerCase();
    if (lower.startsWith('*')) matcher.suffixes.push(lower.slice(1));
    else matcher.exact.add(lower);
  });
  return matcher;
}

function hostMatches(matcher: HostMatcher, host: string): boolean {
  if (matcher.exact.has(host)) return true;
  for (const suffix of matcher.suffixes) if (host.endsWith(suffix)) return true;
  return false;
}

/** The lowercased host of an http(s) Referer, or undefined when it is not such a URL. */
export function refererHost(referer: string): string | undefined {
  const sep = referer.indexOf('://');
  if (sep === -1) return undefined;
  const scheme = referer.slice(0, sep).toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  const rest = referer.slice(sep + 3);
  let end: number;
  if (rest.startsWith('[')) {
    end = rest.indexOf(']') + 1;
    if (end === 0) return undefined;
  } else {
    end = rest.search(/[:/?#]/);
    if (end === -1) end = rest.length;
  }
  const host = rest.slice(0, end);
  return host === '' ? undefined : host.toLowerCase();
}

/** Allows or denies by the host of the Referer header (exactly one of whitelist / blacklist). */
export const refererRestriction = definePlugin({
  type: 'referer-restriction',
  readsRequestBody: configReadsRequestBody,
  category: 'security',
  description: 'Allow or deny requests by the host of their Referer header.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      whitelist: {
        type: 'array',
        items: { type: 'string' },
        description: 'Hosts (example.com) or wildcard suffixes (*.example.com); only these pass.',
      },
      blacklist: {
        type: 'array',
        items: { type: 'string' },
        description: 'Hosts or wildcard suffixes that are denied.',
      },
      bypass_missing: {
        type: 'boolean',
        default: false,
        description: 'Let requests with a missing or unparseable Referer pass.',
      },
      message: {
        type: 'string',
        default: 'Your referer host is not allowed',
        description: 'Denial message, sent as {"message": …} with 403 (templated).',
      },
    },
  },
  outputs: RESTRICTION_OUTPUTS,
  templated: ['message'],
  readsResponseBody: () => false,
  create(config, env) {
    const white = compileHosts(config.whitelist ?? [], 'whitelist');
    const black = compileHosts(config.blacklist ?? [], 'blacklist');
    const whiteMode = white.exact.size + white.suffixes.length > 0;
    const blackMode = black.exact.size + black.suffixes.length > 0;
    if (whiteMode && blackMode) {
      throw new ConfigError('blacklist', 'cannot be combined with whitelist; configure exactly one of them');
    }
    if (!whiteMode && !blackMode) throw new ConfigError('', 'needs a non-empty whitelist or blacklist');
    const bypass = config.bypass_missing;
    const message = env.template(config.message, 'message');
    return {
      run(ctx) {
        const raw = ctx.request.header('referer');
        const host = raw === undefined ? undefined : refererHost(raw);
        const blocked =
          host === undefined ? !bypass : whiteMode ? !hostMatches(white, host) : hostMatches(black, host);
        if (!blocked) return 'success';
        ctx.response.json(403, { message: message.render(ctx) });
        return 'denied';
      },
    };
  },
});
