// Route `status.parents` for the route kinds beyond HTTPRoute (GRPCRoute, TLSRoute, TCPRoute,
// UDPRoute): the same conditions and reasons as HTTPRoute's (translate.ts), one entry per
// parentRef that names a Gateway of our classes.
import type { BackendRef, Condition, Gateway, L4Route, ParentRef } from './types.js';
import { conditions, key, type Accepted, type RouteContext, type StatusUpdate } from './translate.js';

const GROUP = 'gateway.networking.k8s.io';

/** A route with parents and backend references, whatever its kind. */
export interface AnyRoute {
  metadata: L4Route['metadata'];
  spec: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: { backendRefs?: BackendRef[] }[] };
  status?: { parents?: unknown[] };
}

export interface Attachment {
  gw: Gateway;
  gwKey: string;
  accepted: Accepted;
}

/**
 * Walks the route's parentRefs: each one naming a Gateway of ours is accepted or not
 * (`ctx.accept`), its listeners count the route, and `onAccepted` receives the attachment;
 * then the route's status (Accepted, ResolvedRefs with the first backend problem) is queued.
 */
export function attachRoute(
  kind: StatusUpdate['kind'],
  plural: StatusUpdate['plural'],
  route: AnyRoute,
  ctx: RouteContext,
  onAccepted: (attachment: Attachment) => void,
  /** Why the route cannot be served as written (an unsupported filter): Accepted False, UnsupportedValue. */
  unsupported?: string,
): void {
  const routeNs = route.metadata.namespace ?? 'default';
  const problems: { reason: string; message: string }[] = [];
  for (const rule of route.spec.rules ?? [])
    for (const ref of rule.backendRefs ?? []) {
      const r = ctx.resolve(route, ref, kind);
      if (r.reason !== undefined) problems.push({ reason: r.reason, message: r.message ?? '' });
    }
  const parents: unknown[] = [];
  for (const parent of route.spec.parentRefs ?? []) {
    if ((parent.group ?? GROUP) !== GROUP || (parent.kind ?? 'Gateway') !== 'Gateway') continue;
    const gwKey = key(parent.namespace ?? routeNs, parent.name);
    const gw = ctx.gatewayByKey.get(gwKey);
    if (gw === undefined) continue; // not ours: another controller reports it
    const found = ctx.accept(gw, route, parent, kind);
    const accepted =
      unsupported === undefined || found.listeners.length === 0
        ? found
        : { listeners: [], reason: 'UnsupportedValue', message: unsupported };
    for (const { listener } of accepted.listeners) ctx.attach(gwKey, listener.name);
    if (accepted.listeners.length > 0) onAccepted({ gw, gwKey, accepted });
    const g = route.metadata.generation;
    const previous = (
      route.status?.parents as { parentRef?: ParentRef; conditions?: Condition[] }[] | undefined
    )?.find(
      (p) =>
        p.parentRef?.name === parent.name && (p.parentRef?.sectionName ?? '') === (parent.sectionName ?? ''),
    )?.conditions;
    const problem = problems[0];
    parents.push({
      parentRef: {
        group: GROUP,
        kind: 'Gateway',
        namespace: gw.metadata.namespace,
        name: parent.name,
        ...(parent.sectionName === undefined ? {} : { sectionName: parent.sectionName }),
        ...(parent.port === undefined ? {} : { port: parent.port }),
      },
      controllerName: ctx.controllerName,
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
        ctx.now,
      ),
    });
  }
  if (parents.length > 0)
    ctx.statuses.push({ kind, plural, namespace: routeNs, name: route.metadata.name, status: { parents } });
}

/** Route age order (oldest first, then namespace/name): the spec's tie-break across routes. */
export function olderFirst(
  a: { metadata: AnyRoute['metadata'] },
  b: { metadata: AnyRoute['metadata'] },
): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name));
}

/**
 * The targets of a rule's weighted backends as one pool: each endpoint weighs its backend's
 * weight divided among the backend's endpoints (scaled to integers), so the backends share
 * the traffic as their weights say. Backends that are invalid or have no ready endpoint get none.
 */
export function weightedTargets(
  route: AnyRoute,
  refs: BackendRef[],
  ctx: RouteContext,
  kind: string,
): { host: string; port: number; weight: number }[] {
  const usable = refs
    .map((ref) => ctx.resolve(route, ref, kind).backend)
    .filter((b) => b.weight > 0 && b.targets !== 'invalid' && b.targets.length > 0);
  const lcm = usable.reduce((l, b) => {
    const n = (b.targets as unknown[]).length;
    let a = l;
    let c = n;
    while (c !== 0) [a, c] = [c, a % c];
    return (l * n) / a;
  }, 1);
  const out: { host: string; port: number; weight: number }[] = [];
  for (const b of usable) {
    const targets = b.targets as { host: string; port: number }[];
    for (const t of targets) out.push({ ...t, weight: (b.weight * lcm) / targets.length });
  }
  return out;
}
