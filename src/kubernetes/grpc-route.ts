// GRPCRoute (gateway.networking.k8s.io/v1) → entries of the HTTP/2 listener ports' policies
// (translate.ts): a gRPC method is the path `/<service>/<method>`, so service/method matches are
// path conditions, tried before the HTTPRoute entries of the same host and only for gRPC calls
// (content-type application/grpc). The rule's backends are one `upstream` node with `scheme:
// grpc` (h2c to the endpoints), through the gateway's gRPC proxying path (docs/grpc.md).
import type { EdgeConfig, NodeConfig } from '../config/gateway.js';
import { attachRoute, olderFirst, weightedTargets } from './stream-route-parents.js';
import {
  LISTENER_PORT_HEADER,
  escapeRegex,
  hostCondition,
  type Entry,
  type Rank,
  type RouteContext,
} from './translate.js';
import type { GRPCRoute, GRPCRouteMatch, GRPCRouteRule, HeaderFilter } from './types.js';

/** The path condition of a method match: Exact by segments, RegularExpression on each (RE2-like syntax as JS). */
function methodCondition(m: GRPCRouteMatch['method']): unknown[] | undefined {
  if (m === undefined || ((m.service ?? '') === '' && (m.method ?? '') === '')) return undefined;
  const service = m.service ?? '';
  const method = m.method ?? '';
  if ((m.type ?? 'Exact') === 'Exact') {
    if (service !== '' && method !== '') return ['uri', '==', `/${service}/${method}`];
    if (service !== '') return ['uri', '~~', `^/${escapeRegex(service)}/[^/]+$`];
    return ['uri', '~~', `^/[^/]+/${escapeRegex(method)}$`];
  }
  const s = service === '' ? '[^/]+' : `(?:${service})`;
  const me = method === '' ? '[^/]+' : `(?:${method})`;
  return ['uri', '~~', `^/${s}/${me}$`];
}

/** Sort key: host as for HTTPRoute, then longer service, longer method, more headers (Exact counted, regex as 0). */
function rankOf(host: string | null, match: GRPCRouteMatch): Rank {
  const hostRank = host === null ? 3 : host.startsWith('*.') ? 2 : 1;
  const exact = (match.method?.type ?? 'Exact') === 'Exact';
  return [
    hostRank,
    -(host?.length ?? 0),
    0,
    -(exact ? (match.method?.service ?? '').length : 0),
    -(exact ? (match.method?.method ?? '').length : 0),
    -(match.headers?.length ?? 0),
  ];
}

function headerSet(filter: HeaderFilter | undefined): {
  set: Record<string, string>;
  add: { name: string; value: string }[];
  remove: string[];
} {
  const set: Record<string, string> = {};
  for (const h of filter?.set ?? []) set[h.name.toLowerCase()] = h.value;
  return { set, add: filter?.add ?? [], remove: filter?.remove ?? [] };
}

/** The nodes of one rule: request headers, then one gRPC upstream over the weighted backends. */
function emitter(
  route: GRPCRoute,
  rule: GRPCRouteRule,
  ctx: RouteContext,
): NonNullable<Entry['custom']>['emit'] {
  return (id, from, nodes: NodeConfig[], edges: EdgeConfig[]) => {
    const filters = rule.filters ?? [];
    const req = headerSet(filters.find((f) => f.type === 'RequestHeaderModifier')?.requestHeaderModifier);
    nodes.push({
      id: `${id}-req`,
      type: 'proxy-rewrite',
      config: { headers: { set: req.set, add: req.add, remove: [...req.remove, LISTENER_PORT_HEADER] } },
    });
    edges.push({ from, to: `${id}-req.in` });
    const refs = (rule.backendRefs ?? []).filter((r) => (r.weight ?? 1) > 0);
    const backends = refs.map((r) => ctx.resolve(route, r, 'GRPCRoute').backend);
    if (backends.length === 0 || backends.every((b) => b.targets === 'invalid')) {
      edges.push({ from: `${id}-req.success`, to: 'fail-500.in' });
      return;
    }
    const targets = weightedTargets(route, refs, ctx, 'GRPCRoute');
    if (targets.length === 0) {
      edges.push({ from: `${id}-req.success`, to: 'fail-503.in' });
      return;
    }
    nodes.push({
      id: `${id}-up`,
      type: 'upstream',
      config: { scheme: 'grpc', targets, pass_host: 'pass' },
    });
    edges.push(
      { from: `${id}-req.success`, to: `${id}-up.in` },
      { from: `${id}-up.success`, to: 'out.in' },
      // A dead endpoint answers UNAVAILABLE (docs/grpc.md), not the graph's unhandled 502.
      { from: `${id}-up.error`, to: 'out.in' },
    );
  };
}

/** Status for every GRPCRoute with a parent of ours, and the policy entries of the accepted ones. */
/** Filters a rule may carry: the answer of a gRPC call streams through, so only the request side is changed. */
const SUPPORTED_FILTERS = new Set(['RequestHeaderModifier']);

export function translateGrpcRoutes(routes: GRPCRoute[], ctx: RouteContext): Entry[] {
  const entries: Entry[] = [];
  for (const route of [...routes].sort(olderFirst)) {
    const bad = (route.spec.rules ?? [])
      .flatMap((r) => r.filters ?? [])
      .find((f) => !SUPPORTED_FILTERS.has(f.type));
    const unsupported = bad === undefined ? undefined : `filter ${bad.type} is not supported on GRPCRoute`;
    attachRoute(
      'GRPCRoute',
      'grpcroutes',
      route,
      ctx,
      ({ gw, accepted }) => {
        for (const { listener, hosts } of accepted.listeners) {
          if (!ctx.programmed(gw, listener)) continue;
          for (const host of hosts)
            (route.spec.rules ?? []).forEach((rule, ruleIndex) => {
              const emit = emitter(route, rule, ctx);
              const matches = rule.matches !== undefined && rule.matches.length > 0 ? rule.matches : [{}];
              matches.forEach((match, matchIndex) => {
                const conditions: unknown[] = [];
                if (host !== null) conditions.push(hostCondition(host));
                conditions.push(['http_content_type', '~~', '^application/grpc($|[+;])']);
                const method = methodCondition(match.method);
                if (method !== undefined) conditions.push(method);
                for (const h of match.headers ?? []) {
                  const subject = `http_${h.name.toLowerCase().replace(/-/g, '_')}`;
                  conditions.push(
                    (h.type ?? 'Exact') === 'Exact' ? [subject, '==', h.value] : [subject, '~~', h.value],
                  );
                }
                entries.push({
                  port: listener.port,
                  https: listener.protocol === 'HTTPS',
                  host,
                  match: {},
                  route,
                  rule: {},
                  ruleIndex,
                  matchIndex,
                  custom: { rank: rankOf(host, match), conditions, emit },
                });
              });
            });
        }
      },
      unsupported,
    );
  }
  return entries;
}
