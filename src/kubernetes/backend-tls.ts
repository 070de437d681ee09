// BackendTLSPolicy (gateway.networking.k8s.io v1, v1alpha3): TLS from the gateway to a Service's
// endpoints. targetRefs name a Service (sectionName: one of its ports by name); validation names
// the CA (ConfigMap key ca.crt, or wellKnownCACertificates: System) and the hostname sent as SNI
// and verified. An unresolvable CA: ResolvedRefs False InvalidCACertificateRef, Accepted False
// NoValidCACertificate, and the backends it targets answer 500 (docs/kubernetes.md).
import type { BackendTLSPolicy } from './crd-types.js';
import type { ClusterState, KObject } from './types.js';
import { conditions, key, type StatusUpdate } from './status-update.js';

const GROUP = 'gateway.networking.k8s.io';

/** The upstream keys a targeted backend gets, or 'invalid' (→ 500). */
export type BackendTls = { tls: { server_name: string; ca_pem?: string } } | 'invalid';

export interface BackendTlsIndex {
  /** The TLS of the Service's port, undefined when no policy targets it. */
  forBackend(
    ns: string,
    service: string,
    port: { port: number; name?: string | undefined },
  ): BackendTls | undefined;
  /** Policy statuses, one ancestor per Gateway of ours whose routes reach a targeted Service. */
  statuses(gateways: ReadonlyMap<string, KObject>, controllerName: string, now: string): StatusUpdate[];
}

interface Resolved {
  policy: BackendTLSPolicy;
  tls: BackendTls;
  problem?: { reason: string; message: string };
}

export function backendTlsIndex(state: ClusterState): BackendTlsIndex {
  const configMaps = new Map(
    (state.configMaps ?? []).map((c) => [key(c.metadata.namespace, c.metadata.name), c]),
  );
  const resolved: Resolved[] = [];
  // Oldest policy wins a conflict on the same target (the spec's tie-break: creation, then name).
  const policies = [...(state.backendTLSPolicies ?? [])].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      a.metadata.name.localeCompare(b.metadata.name),
  );
  for (const policy of policies) {
    const ns = policy.metadata.namespace ?? 'default';
    const v = policy.spec?.validation;
    const hostname = v?.hostname ?? '';
    let tls: BackendTls;
    let problem: Resolved['problem'];
    const refs = v?.caCertificateRefs ?? [];
    if (refs.length > 0) {
      const pems: string[] = [];
      for (const ref of refs) {
        if ((ref.group ?? '') !== '' || (ref.kind ?? 'ConfigMap') !== 'ConfigMap') {
          problem = {
            reason: 'InvalidKind',
            message: `caCertificateRefs kind ${ref.kind ?? ''} is not supported`,
          };
          break;
        }
        const pem = configMaps.get(key(ns, ref.name))?.data?.['ca.crt'];
        if (pem === undefined || !pem.includes('-----BEGIN ')) {
          problem = {
            reason: 'InvalidCACertificateRef',
            message: `ConfigMap ${ns}/${ref.name} ${pem === undefined ? 'not found or has no ca.crt' : 'ca.crt is not PEM'}`,
          };
          break;
        }
        pems.push(pem);
      }
      tls = problem === undefined ? { tls: { server_name: hostname, ca_pem: pems.join('\n') } } : 'invalid';
    } else if (v?.wellKnownCACertificates === 'System') tls = { tls: { server_name: hostname } };
    else {
      problem = {
        reason: 'InvalidCACertificateRef',
        message: 'no caCertificateRefs and no wellKnownCACertificates',
      };
      tls = 'invalid';
    }
    resolved.push({ policy, tls, ...(problem === undefined ? {} : { problem }) });
  }

  const targets = (r: Resolved) =>
    (r.policy.spec?.targetRefs ?? []).filter(
      (t) => (t.group ?? '') === '' && (t.kind ?? 'Service') === 'Service',
    );

  return {
    forBackend(ns, service, port) {
      for (const r of resolved) {
        if ((r.policy.metadata.namespace ?? 'default') !== ns) continue;
        for (const t of targets(r))
          if (t.name === service && (t.sectionName === undefined || t.sectionName === (port.name ?? '')))
            return r.tls;
      }
      return undefined;
    },
    statuses(gateways, controllerName, now) {
      const out: StatusUpdate[] = [];
      for (const r of resolved) {
        const ns = r.policy.metadata.namespace ?? 'default';
        const names = new Set(targets(r).map((t) => t.name));
        const ancestors = new Map<string, KObject>();
        for (const route of state.httpRoutes) {
          const routeNs = route.metadata.namespace ?? 'default';
          const reaches = (route.spec.rules ?? []).some((rule) =>
            (rule.backendRefs ?? []).some(
              (b) =>
                (b.namespace ?? routeNs) === ns && names.has(b.name) && (b.kind ?? 'Service') === 'Service',
            ),
          );
          if (!reaches) continue;
          for (const p of route.spec.parentRefs ?? []) {
            if ((p.group ?? GROUP) !== GROUP || (p.kind ?? 'Gateway') !== 'Gateway') continue;
            const gk = key(p.namespace ?? routeNs, p.name);
            const gw = gateways.get(gk);
            if (gw !== undefined) ancestors.set(gk, gw);
          }
        }
        if (ancestors.size === 0) continue;
        const g = r.policy.metadata.generation;
        const previous = r.policy.status?.ancestors as
          | {
              ancestorRef?: { name?: string; namespace?: string };
              conditions?: Parameters<typeof conditions>[0];
            }[]
          | undefined;
        out.push({
          kind: 'BackendTLSPolicy',
          plural: 'backendtlspolicies',
          namespace: ns,
          name: r.policy.metadata.name,
          status: {
            ancestors: [...ancestors.values()].map((gw) => ({
              ancestorRef: {
                group: GROUP,
                kind: 'Gateway',
                namespace: gw.metadata.namespace,
                name: gw.metadata.name,
              },
              controllerName,
              conditions: conditions(
                previous?.find(
                  (a) =>
                    a.ancestorRef?.name === gw.metadata.name &&
                    a.ancestorRef?.namespace === gw.metadata.namespace,
                )?.conditions,
                r.problem === undefined
                  ? [
                      {
                        type: 'Accepted',
                        status: 'True',
                        reason: 'Accepted',
                        message: 'Applied',
                        observedGeneration: g,
                      },
                      {
                        type: 'ResolvedRefs',
                        status: 'True',
                        reason: 'ResolvedRefs',
                        message: 'Resolved',
                        observedGeneration: g,
                      },
                    ]
                  : [
                      {
                        type: 'Accepted',
                        status: 'False',
                        reason: 'NoValidCACertificate',
                        message: r.problem.message,
                        observedGeneration: g,
                      },
                      {
                        type: 'ResolvedRefs',
                        status: 'False',
                        reason: r.problem.reason,
                        message: r.problem.message,
                        observedGeneration: g,
                      },
                    ],
                now,
              ),
            })),
          },
        });
      }
      return out;
    },
  };
}
