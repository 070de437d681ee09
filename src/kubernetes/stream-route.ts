// TLSRoute, TCPRoute, UDPRoute (gateway.networking.k8s.io/v1alpha2) → the stream (L4) sockets of
// the TLS-passthrough, TCP and UDP listeners (src/stream/kubernetes-ports.ts binds them at port +
// port_offset). A TLS port routes each connection by the ClientHello's server name to a route's
// backends without terminating TLS; a TCP or UDP port relays to the backends of the one route
// that holds it (the oldest; newer ones are accepted but get no traffic, as the suite expects).
import { attachRoute, olderFirst, weightedTargets } from './stream-route-parents.js';
import type { RouteContext, StatusUpdate, StreamPortConfig, StreamTargetConfig } from './translate.js';
import type { ClusterState, L4Route } from './types.js';

const KINDS: {
  kind: StatusUpdate['kind'];
  plural: StatusUpdate['plural'];
  state: 'tlsRoutes' | 'tcpRoutes' | 'udpRoutes';
}[] = [
  { kind: 'TLSRoute', plural: 'tlsroutes', state: 'tlsRoutes' },
  { kind: 'TCPRoute', plural: 'tcproutes', state: 'tcpRoutes' },
  { kind: 'UDPRoute', plural: 'udproutes', state: 'udpRoutes' },
];

interface Candidate {
  protocol: 'tcp' | 'udp';
  passthrough: boolean;
  port: number;
  hostname: string | null;
  route: L4Route;
  order: number;
  targets: StreamTargetConfig[];
}

/** Exact names first (longer first), then wildcards (longer first), then no hostname. */
function hostOrder(a: string | null, b: string | null): number {
  const rank = (h: string | null) => (h === null ? 2 : h.startsWith('*.') ? 1 : 0);
  return rank(a) - rank(b) || (b?.length ?? 0) - (a?.length ?? 0);
}

export function translateStreamRoutes(state: ClusterState, ctx: RouteContext): StreamPortConfig[] {
  const candidates: Candidate[] = [];
  let order = 0;
  for (const { kind, plural, state: field } of KINDS) {
    for (const route of [...(state[field] ?? [])].sort(olderFirst)) {
      const n = order++;
      attachRoute(kind, plural, route, ctx, ({ gw, accepted }) => {
        const refs = (route.spec.rules ?? []).flatMap((r) => r.backendRefs ?? []);
        const targets = weightedTargets(route, refs, ctx, kind);
        for (const { listener, hosts } of accepted.listeners) {
          if (!ctx.programmed(gw, listener)) continue;
          for (const hostname of kind === 'TLSRoute' ? hosts : [null])
            candidates.push({
              protocol: kind === 'UDPRoute' ? 'udp' : 'tcp',
              passthrough: kind === 'TLSRoute',
              port: listener.port,
              hostname,
              route,
              order: n,
              targets,
            });
        }
      });
    }
  }
  // Programmed listeners without a route still get their socket (it closes what it accepts).
  const ports = new Map<string, StreamPortConfig>();
  for (const gw of ctx.gatewayByKey.values())
    for (const l of gw.spec.listeners) {
      if (!['TLS', 'TCP', 'UDP'].includes(l.protocol) || !ctx.programmed(gw, l)) continue;
      const protocol = l.protocol === 'UDP' ? 'udp' : 'tcp';
      const id = `${protocol}:${l.port}`;
      if (!ports.has(id))
        ports.set(id, { protocol, port: l.port, passthrough: l.protocol === 'TLS', routes: [] });
    }
  candidates.sort((a, b) => hostOrder(a.hostname, b.hostname) || a.order - b.order);
  for (const c of candidates) {
    const socket = ports.get(`${c.protocol}:${c.port}`);
    // A port held by another kind (Conflicted listeners are not programmed), or a name taken by an older route.
    if (socket === undefined || socket.passthrough !== c.passthrough) continue;
    if (socket.routes.some((r) => r.hostname === c.hostname)) continue;
    socket.routes.push({ hostname: c.hostname, targets: c.targets });
  }
  return [...ports.values()].sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
}
