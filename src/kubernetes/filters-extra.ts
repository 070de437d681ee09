// HTTPRoute rule filters beyond the header/redirect/rewrite ones of translate.ts: CORS
// (HTTPCORSFilter, Gateway API v1.3+), RequestMirror, ExtensionRef to a SwitchyardPolicy, and the
// rule's `timeouts` (docs/kubernetes.md). They run after the rule's RequestHeaderModifier and
// URLRewrite, in the order the rule lists them, before its backends.
import type { EdgeConfig, NodeConfig } from '../config/gateway.js';
import { SWITCHYARD_GROUP } from './crd-types.js';
import { supernodeName, type CrdTranslation } from './policy-crd.js';
import type { BackendRef, KObject, RouteFilter, RouteRule } from './types.js';

/** The filter fields translate.ts does not type. */
export interface ExtraFilter {
  cors?: {
    allowOrigins?: string[];
    allowCredentials?: boolean;
    allowMethods?: string[];
    allowHeaders?: string[];
    exposeHeaders?: string[];
    maxAge?: number;
  };
  requestMirror?: {
    backendRef: BackendRef;
    percent?: number;
    fraction?: { numerator: number; denominator?: number };
  };
  extensionRef?: { group: string; kind: string; name: string };
}

export interface RuleTimeouts {
  request?: string;
  backendRequest?: string;
}

type Resolve<R> = (
  route: R,
  ref: BackendRef,
) => { backend: { targets: { host: string; port: number }[] | 'invalid' } };

/** Gateway API Duration (`1h`, `500ms`, `1m30s`): milliseconds, 0 for "no timeout", undefined when malformed. */
export function durationMs(text: string | undefined): number | undefined {
  if (text === undefined || !/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)(ms|h|m|s)/g)) {
    const factor = unit === 'h' ? 3_600_000 : unit === 'm' ? 60_000 : unit === 's' ? 1000 : 1;
    total += Number(n) * factor;
  }
  return total;
}

/**
 * The upstream `timeout_ms` of a rule: the shorter of `timeouts.backendRequest` and
 * `timeouts.request` (0s: none, the upstream's default applies). Filters before the backend are
 * not counted in `request`.
 */
export function ruleTimeoutMs(rule: RouteRule): number | undefined {
  const t = (rule as RouteRule & { timeouts?: RuleTimeouts }).timeouts;
  const values = [durationMs(t?.request), durationMs(t?.backendRequest)].filter(
    (v): v is number => v !== undefined && v > 0,
  );
  return values.length === 0 ? undefined : Math.min(...values);
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** HTTPCORSFilter → the `cors` node's config. */
export function corsConfig(cors: NonNullable<ExtraFilter['cors']>): Record<string, unknown> {
  const origins = cors.allowOrigins ?? [];
  const exact = origins.filter((o) => o === '*' || !o.includes('*'));
  // `https://*.bar.com`: `*` stands for one or more labels (the suite's `xpto.www.bar.com` matches).
  const patterns = origins
    .filter((o) => o !== '*' && o.includes('*'))
    .map((o) => `^${o.split('*').map(escapeRegex).join('[^/]+')}$`);
  return {
    allowed_origins: exact,
    allowed_origins_by_regex: patterns,
    allowed_methods: cors.allowMethods ?? ['GET', 'HEAD', 'POST'],
    allowed_headers: cors.allowHeaders ?? [],
    expose_headers: cors.exposeHeaders ?? [],
    max_age: cors.maxAge ?? 5,
    allow_credentials: cors.allowCredentials ?? false,
  };
}

export interface RuleHook<R extends KObject = KObject> {
  /**
   * Adds the rule's CORS, RequestMirror and ExtensionRef nodes after the port `from`; returns the
   * port that leads on to the backends, or undefined when the rule must answer 500 (an
   * ExtensionRef to a policy that does not exist, is invalid, or is of an unknown kind).
   */
  chain(
    id: string,
    route: R,
    rule: RouteRule,
    from: string,
    nodes: NodeConfig[],
    edges: EdgeConfig[],
  ): string | undefined;
  /** Settings added to the rule's upstream nodes (timeouts). */
  upstream(rule: RouteRule): Record<string, unknown>;
}

export function ruleHook<R extends KObject>(crd: CrdTranslation, resolve: Resolve<R>): RuleHook<R> {
  return {
    chain(id, route, rule, from, nodes, edges) {
      let head = from;
      const ns = route.metadata.namespace ?? 'default';
      const filters = (rule.filters ?? []) as (RouteFilter & ExtraFilter)[];
      for (const [i, f] of filters.entries()) {
        const node = `${id}-f${i}`;
        if (f.type === 'CORS' && f.cors !== undefined) {
          nodes.push({ id: node, type: 'cors', config: corsConfig(f.cors) });
          edges.push({ from: head, to: `${node}.in` });
          const expose = (f.cors.exposeHeaders ?? []).join(', ');
          if (expose === '') edges.push({ from: `${node}.preflight`, to: 'out.in' });
          else {
            // The suite expects exposeHeaders on the preflight answer too (the cors node sets it on
            // actual requests only).
            nodes.push({
              id: `${node}-expose`,
              type: 'response-rewrite',
              config: { headers: { set: { 'access-control-expose-headers': expose } } },
            });
            edges.push(
              { from: `${node}.preflight`, to: `${node}-expose.in` },
              { from: `${node}-expose.success`, to: 'out.in' },
            );
          }
          head = `${node}.success`;
        } else if (f.type === 'RequestMirror' && f.requestMirror !== undefined) {
          const m = f.requestMirror;
          const targets = resolve(route, m.backendRef).backend.targets;
          // A mirror that cannot be sent is skipped: it never changes the answer.
          if (targets === 'invalid' || targets.length === 0) continue;
          const target = targets[0] as { host: string; port: number };
          const ratio =
            m.fraction !== undefined
              ? m.fraction.numerator / (m.fraction.denominator ?? 100)
              : m.percent !== undefined
                ? m.percent / 100
                : 1;
          const host = target.host.includes(':') ? `[${target.host}]` : target.host;
          nodes.push({
            id: node,
            type: 'proxy-mirror',
            config: { host: `http://${host}:${target.port}`, sample_ratio: Math.min(1, Math.max(0, ratio)) },
          });
          edges.push({ from: head, to: `${node}.in` });
          head = `${node}.success`;
        } else if (f.type === 'ExtensionRef') {
          const ref = f.extensionRef;
          if (
            ref === undefined ||
            ref.group !== SWITCHYARD_GROUP ||
            ref.kind !== 'SwitchyardPolicy' ||
            !crd.valid.has(`${ns}/${ref.name}`)
          )
            return undefined;
          nodes.push({ id: node, type: 'supernode', config: { name: supernodeName(ns, ref.name) } });
          edges.push({ from: head, to: `${node}.in` });
          head = `${node}.success`;
        }
      }
      return head;
    },
    upstream(rule) {
      const ms = ruleTimeoutMs(rule);
      return ms === undefined ? {} : { timeout_ms: ms };
    },
  };
}
