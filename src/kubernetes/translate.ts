// Gateway API objects → a gateway.yaml configuration (routes + policies) and the statuses the
// controller writes back. Pure: the same cluster state gives the same result (docs/kubernetes.md).
//
// Every declared listener port D of an accepted HTTP listener becomes one route, matched on the
// header the port's socket stamps on each request (LISTENER_PORT_HEADER), and one policy: a chain
// of `condition` nodes, one per (route, hostname, match) in the Gateway API precedence order; the
// first that holds runs its rule (filters, then backends), the last `false` answers 404.
import { createSecureContext } from 'node:tls';
import type { GatewayConfig, NodeConfig, EdgeConfig, PolicyConfig, RouteConfig } from '../config/gateway.js';
import type {
  BackendRef,
  ClusterState,
  Condition,
  Gateway,
  HeaderFilter,
  KObject,
  LabelSelector,
  Listener,
  ParentRef,
  RouteMatch,
  RouteRule,
  Secret,
} from './types.js';
import { ruleHook, type RuleHook } from './filters-extra.js';
import { backendTlsIndex } from './backend-tls.js';
import { translateCrds, type PolicyCheck } from './policy-crd.js';
import { conditions, key, type StatusUpdate } from './status-update.js';

export { conditions, key, type StatusUpdate } from './status-update.js';

/** Set by each Gateway listener socket on every request (a client's own value is overwritten). */
export const LISTENER_PORT_HEADER = 'x-switchyard-listener-port';
const GROUP = 'gateway.networking.k8s.io';

export interface TranslateOptions {
  controllerName: string;
  statusAddress: string;
  /** Condition timestamps; tests pass a fixed clock. */
  now?: () => string;
  /**
   * The route kinds beyond HTTPRoute (source.ts passes grpc-route.ts and stream-route.ts): their
   * policy entries and stream sockets. Injected so those modules depend on this one, not both ways.
   */
  otherRoutes?: (state: ClusterState, ctx: RouteContext) => { entries: Entry[]; streams: StreamPortConfig[] };
  /** Compiles a SwitchyardPolicy graph (src/plugins/check-policy-graph.ts); absent: every graph is taken as valid. */
  checkPolicy?: PolicyCheck;
}

/** A certificate of an HTTPS listener, from a kubernetes.io/tls Secret (PEM). */
export interface TlsCertificate {
  /** The listener's hostname: the SNI name it is presented for (undefined: the port's default). */
  hostname: string | undefined;
  cert: string;
  key: string;
}

export interface Translation {
  config: GatewayConfig;
  /** Declared ports of the programmed HTTP and HTTPS listeners (the socket binds port + port_offset). */
  ports: number[];
  /** Ports of programmed HTTPS listeners (TLS terminated there) and their certificates, by declared port. */
  tls: Record<number, TlsCertificate[]>;
  /** TLS passthrough, TCP and UDP listener ports (stream-route.ts), bound at port + port_offset. */
  streams: StreamPortConfig[];
  statuses: StatusUpdate[];
}

export interface StreamTargetConfig {
  host: string;
  port: number;
  weight: number;
}

/** One stream socket of the TLS-passthrough, TCP and UDP listeners (stream-route.ts), by declared port. */
export interface StreamPortConfig {
  protocol: 'tcp' | 'udp';
  /** The declared listener port (bound at port + port_offset). */
  port: number;
  /** TLS passthrough: `routes` by server name, in match order; else one route (hostname null). */
  passthrough: boolean;
  /**
   * `hostname`: exact, or `*.` wildcard (any number of labels deeper), or null (any name, and a
   * ClientHello without one). Empty `targets`: the connection is closed (the route's backends are
   * invalid or have no ready endpoint).
   */
  routes: { hostname: string | null; targets: StreamTargetConfig[] }[];
}

/** What the other route kinds' translators (grpc-route.ts, stream-route.ts) use of this one. */
export interface RouteContext {
  controllerName: string;
  now: string;
  gatewayByKey: Map<string, Gateway>;
  programmed(gw: Gateway, l: Listener): boolean;
  accept(gw: Gateway, route: RouteObject, parent: ParentRef, kind: string): Accepted;
  resolve(route: KObject, ref: BackendRef, fromKind: string): Resolved;
  /** Counts the route in the listener's attachedRoutes. */
  attach(gwKey: string, listenerName: string): void;
  statuses: StatusUpdate[];
}

/** A route of any kind, as listener acceptance reads it. */
export type RouteObject = KObject & { spec: { hostnames?: string[] } };
export type Accepted = ReturnType<typeof acceptRoute>;
export interface Resolved {
  reason?: string;
  message?: string;
  backend: Backend;
}

/** What a listener is, once its protocol, route kinds and certificate references are checked. */
interface ListenerInfo {
  /** Why the protocol is not served (Accepted False, UnsupportedProtocol), or undefined. */
  unsupported: string | undefined;
  /** ResolvedRefs False: InvalidCertificateRef, RefNotPermitted or InvalidRouteKinds. */
  refProblem: { reason: string; message: string } | undefined;
  /** The route kinds it takes (`supportedKinds`): HTTPRoute or none. */
  kinds: { group: string; kind: string }[];
  /** Served: an HTTP listener, or an HTTPS one whose certificates all resolved. */
  programmed: boolean;
  certificates: { cert: string; key: string }[] | undefined;
  /** Conflicted True: another listener already serves this port with another protocol. */
  conflict: string | undefined;
}

/** Does a namespace (its labels) match a LabelSelector? An empty selector matches every namespace. */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string>,
): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    if (e.operator === 'In' && !(has && values.includes(value as string))) return false;
    if (e.operator === 'NotIn' && has && values.includes(value as string)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) return false;
  }
  return true;
}

/** The PEM pair of a kubernetes.io/tls Secret, or why it is not usable. */
function secretPair(secret: Secret | undefined): { cert: string; key: string } | string {
  if (secret === undefined) return 'not found';
  if (secret.type !== 'kubernetes.io/tls') return `type ${secret.type ?? '(unset)'} is not kubernetes.io/tls`;
  const crt = secret.data?.['tls.crt'];
  const k = secret.data?.['tls.key'];
  if (crt === undefined || k === undefined) return 'tls.crt or tls.key is missing';
  const cert = Buffer.from(crt, 'base64').toString('utf8');
  const key = Buffer.from(k, 'base64').toString('utf8');
  try {
    // Checks that both parse and that the key matches the certificate.
    createSecureContext({ cert, key });
  } catch (err) {
    return `tls.crt/tls.key do not load: ${(err as Error).message}`;
  }
  return { cert, key };
}

export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Intersection of a listener hostname and a route hostname (Gateway API rules), or undefined. */
export function intersectHost(
  listener: string | undefined,
  route: string | undefined,
): string | null | undefined {
  if (listener === undefined && route === undefined) return null; // any host
  if (listener === undefined) return route;
  if (route === undefined) return listener;
  const lw = listener.startsWith('*.');
  const rw = route.startsWith('*.');
  if (!lw && !rw) return listener.toLowerCase() === route.toLowerCase() ? route : undefined;
  if (lw && !rw) return route.toLowerCase().endsWith(listener.slice(1).toLowerCase()) ? route : undefined;
  if (!lw && rw) return listener.toLowerCase().endsWith(route.slice(1).toLowerCase()) ? listener : undefined;
  // both wildcards: the more specific one, when one covers the other
  if (route.toLowerCase().endsWith(listener.slice(1).toLowerCase())) return route;
  if (listener.toLowerCase().endsWith(route.slice(1).toLowerCase())) return listener;
  return undefined;
}

export interface Entry {
  port: number;
  /** The listener terminates TLS: a redirect without scheme keeps https. */
  https: boolean;
  host: string | null;
  match: RouteMatch;
  route: KObject;
  rule: RouteRule;
  ruleIndex: number;
  matchIndex: number;
  /** Another route kind's entry (a GRPCRoute's): its own sort key, conditions and rule nodes. */
  custom?: {
    rank: Rank;
    conditions: unknown[];
    emit(id: string, from: string, nodes: NodeConfig[], edges: EdgeConfig[]): void;
  };
}

export type Rank = [number, ...number[]];

/** Sort key, ascending = tried first (the HTTPRouteMatch precedence of the Gateway API). */
function rank(e: Entry): Rank {
  if (e.custom !== undefined) return e.custom.rank;
  const host = e.host;
  const hostRank = host === null ? 3 : host.startsWith('*.') ? 2 : 1;
  const path = e.match.path ?? { type: 'PathPrefix', value: '/' };
  const type = path.type ?? 'PathPrefix';
  const typeRank = type === 'Exact' ? 0 : type === 'PathPrefix' ? 1 : 2;
  return [
    hostRank,
    -(host?.length ?? 0),
    1, // after GRPCRoute entries of the same host (they match gRPC calls only)
    typeRank,
    -(path.value ?? '/').length,
    e.match.method === undefined ? 1 : 0,
    -(e.match.headers?.length ?? 0),
    -(e.match.queryParams?.length ?? 0),
  ];
}

function compareEntries(a: Entry, b: Entry): number {
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return (ra[i] ?? 0) - (rb[i] ?? 0);
  const ta = a.route.metadata.creationTimestamp ?? '';
  const tb = b.route.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const na = key(a.route.metadata.namespace, a.route.metadata.name);
  const nb = key(b.route.metadata.namespace, b.route.metadata.name);
  if (na !== nb) return na < nb ? -1 : 1;
  return a.ruleIndex - b.ruleIndex || a.matchIndex - b.matchIndex;
}

/** The condition on the Host (or :authority) for a hostname intersection (`*.` = one label or more). */
export function hostCondition(host: string): unknown[] {
  const re = host.startsWith('*.')
    ? `^[^.]+(\\.[^.]+)*${escapeRegex(host.slice(1))}(:[0-9]+)?$`
    : `^${escapeRegex(host)}(:[0-9]+)?$`;
  return ['host', '~*', re];
}

function matchConditions(e: Entry): unknown[] {
  if (e.custom !== undefined) return e.custom.conditions;
  const out: unknown[] = [];
  if (e.host !== null) out.push(hostCondition(e.host));
  const path = e.match.path ?? { type: 'PathPrefix', value: '/' };
  const value = path.value ?? '/';
  if ((path.type ?? 'PathPrefix') === 'Exact') out.push(['uri', '==', value]);
  else if ((path.type ?? 'PathPrefix') === 'RegularExpression') out.push(['uri', '~~', `^(?:${value})$`]);
  else {
    const prefix = value.replace(/\/+$/, '');
    if (prefix !== '') out.push(['OR', ['uri', '==', prefix], ['uri', '~~', `^${escapeRegex(prefix)}/`]]);
  }
  if (e.match.method !== undefined) out.push(['method', '==', e.match.method]);
  for (const h of e.match.headers ?? []) {
    const subject = `http_${h.name.toLowerCase().replace(/-/g, '_')}`;
    out.push((h.type ?? 'Exact') === 'Exact' ? [subject, '==', h.value] : [subject, '~~', h.value]);
  }
  for (const q of e.match.queryParams ?? []) {
    const subject = `arg_${q.name}`;
    out.push((q.type ?? 'Exact') === 'Exact' ? [subject, '==', q.value] : [subject, '~~', q.value]);
  }
  if (out.length === 0) out.push(['uri', '~~', '^/']);
  return out;
}

/** proxy-rewrite `regex_uri` pairs that replace the matched prefix. */
function prefixRewrite(matchPrefix: string, replacement: string): string[] {
  const prefix = matchPrefix.replace(/\/+$/, '');
  const repl = replacement.replace(/\/+$/, '');
  if (prefix === '') return ['^(/.*)$', `${repl}$1`];
  return [`^${escapeRegex(prefix)}$`, repl === '' ? '/' : repl, `^${escapeRegex(prefix)}(/.*)$`, `${repl}$1`];
}

function headerActions(filter: HeaderFilter | undefined): {
  set: Record<string, string>;
  add: { name: string; value: string }[];
  remove: string[];
} {
  const set: Record<string, string> = {};
  for (const h of filter?.set ?? []) set[h.name.toLowerCase()] = h.value;
  return { set, add: filter?.add ?? [], remove: filter?.remove ?? [] };
}

export interface Backend {
  weight: number;
  /** ready endpoints, or a problem: 'invalid' (→ 500) */
  targets: { host: string; port: number }[] | 'invalid';
  /** Upstream keys of a BackendTLSPolicy targeting it (backend-tls.ts). */
  upstream?: Record<string, unknown>;
}

export function translate(state: ClusterState, options: TranslateOptions): Translation {
  const now = (options.now ?? (() => new Date().toISOString().replace(/\.\d+Z$/, 'Z')))();
  const statuses: StatusUpdate[] = [];
  const classes = new Map(
    state.gatewayClasses
      .filter((c) => c.spec.controllerName === options.controllerName)
      .map((c) => [c.metadata.name, c]),
  );
  for (const c of classes.values()) {
    const g = c.metadata.generation;
    statuses.push({
      kind: 'GatewayClass',
      plural: 'gatewayclasses',
      namespace: undefined,
      name: c.metadata.name,
      status: {
        conditions: conditions(
          c.status?.conditions,
          [
            {
              type: 'Accepted',
              status: 'True',
              reason: 'Accepted',
              message: 'Handled by Switchyard',
              observedGeneration: g,
            },
            {
              type: 'SupportedVersion',
              status: 'True',
              reason: 'SupportedVersion',
              message: 'Gateway API v1',
              observedGeneration: g,
            },
          ],
          now,
        ),
      },
    });
  }
  const gateways = state.gateways.filter((gw) => classes.has(gw.spec.gatewayClassName));
  const gatewayByKey = new Map(gateways.map((gw) => [key(gw.metadata.namespace, gw.metadata.name), gw]));
  const backendTls = backendTlsIndex(state);
  statuses.push(...backendTls.statuses(gatewayByKey, options.controllerName, now));
  const services = new Map(state.services.map((s) => [key(s.metadata.namespace, s.metadata.name), s]));
  const attached = new Map<string, number>(); // gateway key + listener name → count
  const entries: Entry[] = [];

  const granted = (fromNs: string, toNs: string, name: string, fromKind = 'HTTPRoute', toKind = 'Service') =>
    state.referenceGrants.some(
      (g) =>
        g.metadata.namespace === toNs &&
        g.spec.from.some((f) => f.group === GROUP && f.kind === fromKind && f.namespace === fromNs) &&
        g.spec.to.some(
          (t) => (t.group ?? '') === '' && t.kind === toKind && (t.name === undefined || t.name === name),
        ),
    );
  const secrets = new Map(state.secrets.map((s) => [key(s.metadata.namespace, s.metadata.name), s]));
  const namespaceLabels = (ns: string): Record<string, string> => ({
    ...(state.namespaces.find((n) => n.metadata.name === ns)?.metadata.labels ?? {}),
    // Set on every namespace by the API server (Kubernetes ≥ 1.22).
    'kubernetes.io/metadata.name': ns,
  });
  const infos = new Map<string, ListenerInfo>();
  const infoOf = (gw: Gateway, l: Listener): ListenerInfo => {
    const id = `${key(gw.metadata.namespace, gw.metadata.name)}#${l.name}`;
    let info = infos.get(id);
    if (info === undefined) {
      info = listenerInfo(l, (ref) => {
        const gwNs = gw.metadata.namespace ?? 'default';
        const ns = ref.namespace ?? gwNs;
        if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret')
          return {
            reason: 'InvalidCertificateRef',
            message: `unsupported certificateRef kind ${ref.kind ?? ''}`,
          };
        if (ns !== gwNs && !granted(gwNs, ns, ref.name, 'Gateway', 'Secret'))
          return {
            reason: 'RefNotPermitted',
            message: `no ReferenceGrant in ${ns} allows this Gateway to reference Secret ${ref.name}`,
          };
        const pair = secretPair(secrets.get(key(ns, ref.name)));
        if (typeof pair === 'string')
          return { reason: 'InvalidCertificateRef', message: `Secret ${ns}/${ref.name}: ${pair}` };
        return pair;
      });
      infos.set(id, info);
    }
    return info;
  };

  const resolve = (route: KObject, ref: BackendRef, fromKind = 'HTTPRoute'): Resolved => {
    const weight = ref.weight ?? 1;
    const ns = ref.namespace ?? route.metadata.namespace ?? 'default';
    if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service')
      return {
        reason: 'InvalidKind',
        message: `unsupported backend kind ${ref.kind ?? ''}`,
        backend: { weight, targets: 'invalid' },
      };
    if (
      ns !== route.metadata.namespace &&
      !granted(route.metadata.namespace ?? 'default', ns, ref.name, fromKind)
    )
      return {
        reason: 'RefNotPermitted',
        message: `no ReferenceGrant in ${ns} allows this route to reference Service ${ref.name}`,
        backend: { weight, targets: 'invalid' },
      };
    const service = services.get(key(ns, ref.name));
    if (service === undefined)
      return {
        reason: 'BackendNotFound',
        message: `Service ${ns}/${ref.name} not found`,
        backend: { weight, targets: 'invalid' },
      };
    const servicePort = service.spec.ports?.find((p) => p.port === ref.port);
    if (servicePort === undefined)
      return {
        reason: 'BackendNotFound',
        message: `Service ${ns}/${ref.name} has no port ${ref.port ?? '(unset)'}`,
        backend: { weight, targets: 'invalid' },
      };
    const targets: { host: string; port: number }[] = [];
    const seen = new Set<string>();
    for (const slice of state.endpointSlices) {
      if (
        slice.metadata.namespace !== ns ||
        slice.metadata.labels?.['kubernetes.io/service-name'] !== ref.name
      )
        continue;
      const port = slice.ports?.find((p) => (p.name ?? '') === (servicePort.name ?? ''))?.port;
      if (port === undefined) continue;
      for (const ep of slice.endpoints ?? []) {
        if (ep.conditions?.ready === false) continue;
        for (const address of ep.addresses) {
          const id = `${address}:${port}`;
          if (seen.has(id)) continue;
          seen.add(id);
          targets.push({ host: address, port });
        }
      }
    }
    const tls = backendTls.forBackend(ns, ref.name, servicePort);
    if (tls === 'invalid') return { backend: { weight, targets: 'invalid' } };
    return { backend: { weight, targets, ...(tls === undefined ? {} : { upstream: tls }) } };
  };

  // One protocol per port (a socket is plaintext or TLS): the oldest Gateway's listener decides;
  // listeners of the other protocol on that port are Conflicted (ProtocolConflict) and not served.
  const byAge = [...gateways].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name)),
  );
  const portProtocol = new Map<string, string>();
  for (const gw of byAge)
    for (const l of gw.spec.listeners) {
      const info = infoOf(gw, l);
      if (!info.programmed) continue;
      // UDP ports are a namespace of their own; HTTP, HTTPS, TLS and TCP share the TCP one.
      const socket = `${l.protocol === 'UDP' ? 'udp' : 'tcp'}:${l.port}`;
      const first = portProtocol.get(socket);
      if (first === undefined) portProtocol.set(socket, l.protocol);
      else if (first !== l.protocol) {
        info.programmed = false;
        info.conflict = `port ${l.port} is served as ${first} by an older listener`;
      }
    }

  for (const route of state.httpRoutes) {
    const routeNs = route.metadata.namespace ?? 'default';
    const parents: unknown[] = [];
    // Backends resolve the same way for every parent.
    const refProblems: { reason: string; message: string }[] = [];
    for (const rule of route.spec.rules ?? [])
      for (const ref of rule.backendRefs ?? []) {
        const r = resolve(route, ref);
        if (r.reason !== undefined) refProblems.push({ reason: r.reason, message: r.message ?? '' });
      }
    for (const parent of route.spec.parentRefs ?? []) {
      if ((parent.group ?? GROUP) !== GROUP || (parent.kind ?? 'Gateway') !== 'Gateway') continue;
      const gwKey = key(parent.namespace ?? routeNs, parent.name);
      const gw = gatewayByKey.get(gwKey);
      if (gw === undefined) continue; // not ours: another controller reports it
      const accepted = acceptRoute(gw, route, parent, infoOf, namespaceLabels, 'HTTPRoute');
      if (accepted.listeners.length > 0) {
        for (const { listener, hosts } of accepted.listeners) {
          const counter = `${gwKey}#${listener.name}`;
          attached.set(counter, (attached.get(counter) ?? 0) + 1);
          // An HTTPS listener whose certificates do not resolve counts the route but serves nothing.
          if (!infoOf(gw, listener).programmed) continue;
          for (const host of hosts)
            (route.spec.rules ?? []).forEach((rule, ruleIndex) => {
              const matches = rule.matches !== undefined && rule.matches.length > 0 ? rule.matches : [{}];
              matches.forEach((match, matchIndex) =>
                entries.push({
                  port: listener.port,
                  https: listener.protocol === 'HTTPS',
                  host,
                  match,
                  route,
                  rule,
                  ruleIndex,
                  matchIndex,
                }),
              );
            });
        }
      }
      const g = route.metadata.generation;
      const previous = (
        route.status?.parents as { parentRef?: ParentRef; conditions?: Condition[] }[] | undefined
      )?.find(
        (p) =>
          p.parentRef?.name === parent.name &&
          (p.parentRef?.sectionName ?? '') === (parent.sectionName ?? ''),
      )?.conditions;
      const problem = refProblems[0];
      parents.push({
        parentRef: {
          group: GROUP,
          kind: 'Gateway',
          namespace: gw.metadata.namespace,
          name: parent.name,
          ...(parent.sectionName === undefined ? {} : { sectionName: parent.sectionName }),
          ...(parent.port === undefined ? {} : { port: parent.port }),
        },
        controllerName: options.controllerName,
        conditions: conditions(
          previous,
          [
            accepted.listeners.length > 0
              ? {
                  type: 'Accepted',
                  status: 'True',
                  reason: 'Accepted',
                  message: 'Route is accepted',
                  observedGeneration: g,
                }
              : {
                  type: 'Accepted',
                  status: 'False',
                  reason: accepted.reason,
                  message: accepted.message,
                  observedGeneration: g,
                },
            problem === undefined
              ? {
                  type: 'ResolvedRefs',
                  status: 'True',
                  reason: 'ResolvedRefs',
                  message: 'All references resolved',
                  observedGeneration: g,
                }
              : {
                  type: 'ResolvedRefs',
                  status: 'False',
                  reason: problem.reason,
                  message: problem.message,
                  observedGeneration: g,
                },
          ],
          now,
        ),
      });
    }
    if (parents.length > 0)
      statuses.push({
        kind: 'HTTPRoute',
        plural: 'httproutes',
        namespace: routeNs,
        name: route.metadata.name,
        status: { parents },
      });
  }

  const context: RouteContext = {
    controllerName: options.controllerName,
    now,
    gatewayByKey,
    programmed: (gw, l) => infoOf(gw, l).programmed,
    accept: (gw, route, parent, kind) => acceptRoute(gw, route, parent, infoOf, namespaceLabels, kind),
    resolve,
    attach: (gwKey, listenerName) => {
      const counter = `${gwKey}#${listenerName}`;
      attached.set(counter, (attached.get(counter) ?? 0) + 1);
    },
    statuses,
  };
  const other = options.otherRoutes?.(state, context) ?? { entries: [], streams: [] };
  entries.push(...other.entries);
  const streams = other.streams;

  const ports = new Set<number>();
  const tlsByPort = new Map<number, TlsCertificate[]>();
  for (const gw of gateways) {
    const g = gw.metadata.generation;
    const gwKey = key(gw.metadata.namespace, gw.metadata.name);
    const old = gw.status as
      { conditions?: Condition[]; listeners?: { name: string; conditions?: Condition[] }[] } | undefined;
    let anyProgrammed = false;
    const listeners = gw.spec.listeners.map((l) => {
      const info = infoOf(gw, l);
      if (info.programmed) {
        anyProgrammed = true;
        if (l.protocol === 'HTTP' || l.protocol === 'HTTPS') ports.add(l.port);
        if (info.certificates !== undefined) {
          const list = tlsByPort.get(l.port) ?? [];
          for (const c of info.certificates) list.push({ ...c, hostname: l.hostname });
          tlsByPort.set(l.port, list);
        }
      }
      const prev = old?.listeners?.find((p) => p.name === l.name)?.conditions;
      const unsupported = info.unsupported;
      const refs = info.refProblem;
      return {
        name: l.name,
        supportedKinds: info.kinds,
        attachedRoutes: attached.get(`${gwKey}#${l.name}`) ?? 0,
        conditions: conditions(
          prev,
          [
            unsupported === undefined
              ? { type: 'Accepted', status: 'True', reason: 'Accepted', message: '', observedGeneration: g }
              : {
                  type: 'Accepted',
                  status: 'False',
                  reason: 'UnsupportedProtocol',
                  message: unsupported,
                  observedGeneration: g,
                },
            info.programmed
              ? {
                  type: 'Programmed',
                  status: 'True',
                  reason: 'Programmed',
                  message: '',
                  observedGeneration: g,
                }
              : {
                  type: 'Programmed',
                  status: 'False',
                  reason: 'Invalid',
                  message: unsupported ?? refs?.message ?? info.conflict ?? '',
                  observedGeneration: g,
                },
            refs === undefined
              ? {
                  type: 'ResolvedRefs',
                  status: 'True',
                  reason: 'ResolvedRefs',
                  message: '',
                  observedGeneration: g,
                }
              : {
                  type: 'ResolvedRefs',
                  status: 'False',
                  reason: refs.reason,
                  message: refs.message,
                  observedGeneration: g,
                },
            info.conflict === undefined
              ? {
                  type: 'Conflicted',
                  status: 'False',
                  reason: 'NoConflicts',
                  message: '',
                  observedGeneration: g,
                }
              : {
                  type: 'Conflicted',
                  status: 'True',
                  reason: 'ProtocolConflict',
                  message: info.conflict,
                  observedGeneration: g,
                },
          ],
          now,
        ),
      };
    });
    const ip = /^[0-9.]+$|:/.test(options.statusAddress);
    statuses.push({
      kind: 'Gateway',
      plural: 'gateways',
      namespace: gw.metadata.namespace,
      name: gw.metadata.name,
      status: {
        addresses: [{ type: ip ? 'IPAddress' : 'Hostname', value: options.statusAddress }],
        conditions: conditions(
          old?.conditions,
          [
            {
              type: 'Accepted',
              status: 'True',
              reason: 'Accepted',
              message: 'Handled by Switchyard',
              observedGeneration: g,
            },
            anyProgrammed
              ? {
                  type: 'Programmed',
                  status: 'True',
                  reason: 'Programmed',
                  message: 'Serving',
                  observedGeneration: g,
                }
              : {
                  type: 'Programmed',
                  status: 'False',
                  reason: 'Invalid',
                  message: 'no listener is programmed',
                  observedGeneration: g,
                },
          ],
          now,
        ),
        listeners,
      },
    });
  }

  const crd = translateCrds(state, options.checkPolicy, now);
  statuses.push(...crd.statuses);
  const hook = ruleHook(crd, resolve);
  const routes: RouteConfig[] = [];
  const policies: PolicyConfig[] = [];
  for (const port of [...ports].sort((a, b) => a - b)) {
    const mine = entries.filter((e) => e.port === port).sort(compareEntries);
    const name = `k8s-port-${port}`;
    routes.push({
      name,
      match: { path: '/*', headers: { [LISTENER_PORT_HEADER]: String(port) } },
      policy: name,
    });
    policies.push(portPolicy(name, port, mine, resolve, hook));
  }
  return {
    config: {
      routes,
      policies,
      supernodes: crd.supernodes,
      consumers: crd.consumers,
      global_rules: crd.globalRules,
    } as GatewayConfig,
    ports: [...ports].sort((a, b) => a - b),
    tls: Object.fromEntries(tlsByPort),
    streams,
    statuses,
  };
}

function listenerInfo(
  l: Listener,
  certificate: (ref: {
    group?: string;
    kind?: string;
    name: string;
    namespace?: string;
  }) => { cert: string; key: string } | { reason: string; message: string },
): ListenerInfo {
  const mode = l.tls?.mode ?? 'Terminate';
  // The route kinds each protocol serves (GRPCRoute on HTTP/2: h2c prior knowledge, or TLS ALPN h2).
  const served =
    l.protocol === 'HTTP' || (l.protocol === 'HTTPS' && mode === 'Terminate')
      ? ['HTTPRoute', 'GRPCRoute']
      : l.protocol === 'TLS' && mode === 'Passthrough'
        ? ['TLSRoute']
        : l.protocol === 'TCP'
          ? ['TCPRoute']
          : l.protocol === 'UDP'
            ? ['UDPRoute']
            : [];
  const unsupported =
    served.length > 0
      ? undefined
      : l.protocol === 'HTTPS'
        ? 'HTTPS with tls.mode Passthrough is not supported: use protocol TLS'
        : l.protocol === 'TLS'
          ? 'TLS with tls.mode Terminate is not supported yet'
          : `protocol ${l.protocol} is not supported`;
  const declared = l.allowedRoutes?.kinds;
  const isServed = (k: { group?: string; kind: string }) =>
    (k.group ?? GROUP) === GROUP && served.includes(k.kind);
  const kinds = (
    declared === undefined || declared.length === 0
      ? served
      : served.filter((kind) => declared.some((k) => isServed(k) && k.kind === kind))
  ).map((kind) => ({ group: GROUP, kind }));
  let refProblem: { reason: string; message: string } | undefined;
  let certificates: { cert: string; key: string }[] | undefined;
  if (unsupported === undefined && l.protocol === 'HTTPS') {
    const refs = l.tls?.certificateRefs ?? [];
    if (refs.length === 0)
      refProblem = {
        reason: 'InvalidCertificateRef',
        message: 'an HTTPS listener needs tls.certificateRefs',
      };
    certificates = [];
    for (const ref of refs) {
      const r = certificate(ref);
      if ('reason' in r) {
        refProblem ??= r;
        continue;
      }
      certificates.push(r);
    }
  }
  const badKinds = (declared ?? []).filter((k) => !isServed(k));
  if (refProblem === undefined && unsupported === undefined && badKinds.length > 0)
    refProblem = {
      reason: 'InvalidRouteKinds',
      message: `unsupported route kinds: ${badKinds.map((k) => `${k.group ?? GROUP}/${k.kind}`).join(', ')}`,
    };
  const certsOk =
    l.protocol !== 'HTTPS' ||
    (refProblem?.reason !== 'InvalidCertificateRef' && refProblem?.reason !== 'RefNotPermitted');
  return {
    unsupported,
    refProblem,
    kinds,
    programmed: unsupported === undefined && certsOk && kinds.length > 0,
    certificates,
    conflict: undefined,
  };
}

function acceptRoute(
  gw: Gateway,
  route: RouteObject,
  parent: ParentRef,
  infoOf: (gw: Gateway, l: Listener) => ListenerInfo,
  namespaceLabels: (ns: string) => Record<string, string>,
  kind: string,
): { listeners: { listener: Listener; hosts: (string | null)[] }[]; reason: string; message: string } {
  const routeNs = route.metadata.namespace ?? 'default';
  let candidates = gw.spec.listeners;
  if (parent.sectionName !== undefined) candidates = candidates.filter((l) => l.name === parent.sectionName);
  if (parent.port !== undefined) candidates = candidates.filter((l) => l.port === parent.port);
  if (candidates.length === 0)
    return { listeners: [], reason: 'NoMatchingParent', message: 'no listener matches the parentRef' };
  // Listeners that take this kind (by protocol and allowedRoutes.kinds) from the route's namespace.
  candidates = candidates.filter((l) => infoOf(gw, l).kinds.some((k) => k.kind === kind));
  const allowed = candidates.filter((l) => {
    const from = l.allowedRoutes?.namespaces?.from ?? 'Same';
    if (from === 'All') return true;
    if (from === 'Same') return routeNs === gw.metadata.namespace;
    if (from === 'Selector')
      return (
        l.allowedRoutes?.namespaces?.selector !== undefined &&
        selectorMatches(l.allowedRoutes.namespaces.selector, namespaceLabels(routeNs))
      );
    return false;
  });
  if (allowed.length === 0)
    return {
      listeners: [],
      reason: 'NotAllowedByListeners',
      message: 'no listener allows routes from this namespace',
    };
  const out: { listener: Listener; hosts: (string | null)[] }[] = [];
  for (const listener of allowed) {
    const routeHosts =
      route.spec.hostnames !== undefined && route.spec.hostnames.length > 0
        ? route.spec.hostnames
        : [undefined];
    const hosts = new Set<string | null>();
    for (const h of routeHosts) {
      const i = intersectHost(listener.hostname, h);
      if (i !== undefined) hosts.add(i);
    }
    if (hosts.size > 0) out.push({ listener, hosts: [...hosts] });
  }
  if (out.length === 0)
    return {
      listeners: [],
      reason: 'NoMatchingListenerHostname',
      message: 'no listener hostname intersects the route hostnames',
    };
  return { listeners: out, reason: 'Accepted', message: '' };
}

function portPolicy(
  name: string,
  port: number,
  entries: Entry[],
  resolve: (route: KObject, ref: BackendRef) => { backend: Backend },
  hook: RuleHook,
): PolicyConfig {
  const nodes: NodeConfig[] = [
    { id: 'in', type: 'listener' },
    { id: 'out', type: 'client' },
    {
      id: 'not-found',
      type: 'mocking',
      config: {
        response_status: 404,
        response_example: '{"error":"not_found","message":"No route matched"}',
        with_mock_header: false,
      },
    },
    {
      id: 'fail-500',
      type: 'mocking',
      config: {
        response_status: 500,
        response_example: '{"error":"internal_error","message":"the rule has no usable backend"}',
        with_mock_header: false,
      },
    },
    {
      id: 'fail-503',
      type: 'mocking',
      config: {
        response_status: 503,
        response_example: '{"error":"service_unavailable","message":"the backend has no ready endpoint"}',
        with_mock_header: false,
      },
    },
  ];
  const edges: EdgeConfig[] = [
    { from: 'not-found.success', to: 'out.in' },
    { from: 'fail-500.success', to: 'out.in' },
    { from: 'fail-503.success', to: 'out.in' },
  ];
  let previous = 'in.out';
  entries.forEach((e, i) => {
    const m = `m${i}`;
    nodes.push({ id: m, type: 'condition', config: { conditions: matchConditions(e) } });
    edges.push({ from: previous, to: `${m}.in` });
    previous = `${m}.false`;
    ruleNodes(`r${i}`, port, e, `${m}.true`, nodes, edges, resolve, hook);
  });
  edges.push({ from: previous, to: 'not-found.in' });
  return { name, nodes, edges };
}

function ruleNodes(
  id: string,
  port: number,
  e: Entry,
  from: string,
  nodes: NodeConfig[],
  edges: EdgeConfig[],
  resolve: (route: KObject, ref: BackendRef) => { backend: Backend },
  hook: RuleHook,
): void {
  if (e.custom !== undefined) {
    e.custom.emit(id, from, nodes, edges);
    return;
  }
  const filters = e.rule.filters ?? [];
  const reqHeaders = headerActions(
    filters.find((f) => f.type === 'RequestHeaderModifier')?.requestHeaderModifier,
  );
  const rewrite = filters.find((f) => f.type === 'URLRewrite')?.urlRewrite;
  const redirect = filters.find((f) => f.type === 'RequestRedirect')?.requestRedirect;
  const matchPrefix =
    (e.match.path?.type ?? 'PathPrefix') === 'PathPrefix' ? (e.match.path?.value ?? '/') : '/';
  const pathMod = redirect?.path ?? rewrite?.path;
  const rq: Record<string, unknown> = {
    headers: {
      set: reqHeaders.set,
      add: reqHeaders.add,
      remove: [...reqHeaders.remove, LISTENER_PORT_HEADER],
    },
  };
  if (pathMod?.type === 'ReplaceFullPath') rq['uri'] = pathMod.replaceFullPath ?? '/';
  else if (pathMod?.type === 'ReplacePrefixMatch')
    rq['regex_uri'] = prefixRewrite(matchPrefix, pathMod.replacePrefixMatch ?? '/');
  if (rewrite?.hostname !== undefined) rq['host'] = rewrite.hostname;
  nodes.push({ id: `${id}-req`, type: 'proxy-rewrite', config: rq });
  edges.push({ from, to: `${id}-req.in` });
  if (redirect !== undefined) {
    const scheme = redirect.scheme ?? (e.https ? 'https' : 'http');
    const host = redirect.hostname ?? (e.host !== null && !e.host.startsWith('*.') ? e.host : '$host');
    const p = redirect.port ?? (redirect.scheme !== undefined ? (scheme === 'https' ? 443 : 80) : port);
    const showPort = !((scheme === 'http' && p === 80) || (scheme === 'https' && p === 443));
    // The path was rewritten by the node before (ReplaceFullPath / ReplacePrefixMatch), or is the request's.
    nodes.push({
      id: `${id}-redirect`,
      type: 'redirect',
      config: {
        uri: `${scheme}://${host}${showPort ? `:${p}` : ''}$uri`,
        ret_code: redirect.statusCode ?? 302,
      },
    });
    edges.push(
      { from: `${id}-req.success`, to: `${id}-redirect.in` },
      { from: `${id}-redirect.redirect`, to: 'out.in' },
    );
    edges.push({ from: `${id}-redirect.success`, to: 'out.in' });
    return;
  }
  // CORS, RequestMirror, ExtensionRef (filters-extra.ts); undefined: the rule answers 500.
  const head = hook.chain(id, e.route, e.rule, `${id}-req.success`, nodes, edges);
  if (head === undefined) {
    edges.push({ from: `${id}-req.success`, to: 'fail-500.in' });
    return;
  }
  const extra = hook.upstream(e.rule);
  const respFilter = filters.find((f) => f.type === 'ResponseHeaderModifier')?.responseHeaderModifier;
  let answer = 'out.in';
  if (respFilter !== undefined) {
    const h = headerActions(respFilter);
    nodes.push({
      id: `${id}-resp`,
      type: 'response-rewrite',
      config: { headers: { set: h.set, add: h.add.map((a) => `${a.name}: ${a.value}`), remove: h.remove } },
    });
    edges.push({ from: `${id}-resp.success`, to: 'out.in' });
    answer = `${id}-resp.in`;
  }
  const backends = (e.rule.backendRefs ?? [])
    .map((ref) => resolve(e.route, ref).backend)
    .filter((b) => b.weight > 0);
  if (backends.length === 0) {
    edges.push({ from: head, to: 'fail-500.in' });
    return;
  }
  if (backends.length === 1) {
    const only = backends[0] as Backend;
    if (only.targets === 'invalid') edges.push({ from: head, to: 'fail-500.in' });
    else if (only.targets.length === 0) edges.push({ from: head, to: 'fail-503.in' });
    else {
      nodes.push({
        id: `${id}-up`,
        type: 'upstream',
        config: { ...extra, ...only.upstream, targets: only.targets, pass_host: 'pass' },
      });
      edges.push({ from: head, to: `${id}-up.in` }, { from: `${id}-up.success`, to: answer });
    }
    return;
  }
  // Several weighted backends: one traffic-split slot each; the unusable ones share the default
  // slot, which answers 500 (invalid) — a backend without ready endpoints counts as unusable too.
  const slots: Record<string, unknown>[] = [];
  let broken = 0;
  for (const b of backends) {
    // A split slot has no TLS keys: a BackendTLSPolicy backend there is unusable, never plaintext.
    if (b.targets === 'invalid' || b.targets.length === 0 || b.upstream !== undefined) broken += b.weight;
    else slots.push({ weight: b.weight, upstream: { ...extra, targets: b.targets } });
  }
  if (broken > 0) slots.push({ weight: broken });
  if (slots.length === 1 && broken > 0) {
    edges.push({ from: head, to: 'fail-500.in' });
    return;
  }
  nodes.push({
    id: `${id}-split`,
    type: 'traffic-split',
    config: { rules: [{ weighted_upstreams: slots }] },
  });
  edges.push(
    { from: head, to: `${id}-split.in` },
    { from: `${id}-split.routed`, to: answer },
    { from: `${id}-split.success`, to: 'fail-500.in' },
  );
}
