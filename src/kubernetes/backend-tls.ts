// BackendTLSPolicy (gateway.networking.k8s.io v1, v1alpha3): TLS from the gateway to a Service's
// endpoints. targetRefs name a Service (sectionName: one of its ports by name, which takes
// precedence over a policy for the whole Service); validation names the CA (ConfigMap key ca.crt,
// or wellKnownCACertificates: System) and the hostname sent as SNI and verified. Reasons as the
// spec (apis/v1/backendtlspolicy_types.go) gives them: an unresolvable CA → ResolvedRefs False
// InvalidCACertificateRef (InvalidKind for another kind) and, all refs invalid, Accepted False
// NoValidCACertificate; an unknown wellKnownCACertificates or subjectAltNames (not supported) →
// Accepted False Invalid; a younger policy on a target an older one holds → Accepted False
// Conflicted. The backends of a policy that does not apply cleanly answer 500 (docs/kubernetes.md).
import type { BackendTLSPolicy, ConfigMap } from './crd-types.js';
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

interface Problem {
  reason: string;
  message: string;
}

interface Resolved {
  policy: BackendTLSPolicy;
  tls: BackendTls;
  /** ResolvedRefs False (InvalidCACertificateRef, InvalidKind). */
  refProblem?: Problem;
  /** Accepted False: NoValidCACertificate, Invalid, or Conflicted (an older policy has the target). */
  notAccepted?: Problem;
}

/** The CA of a policy's validation: PEMs, or why it does not resolve. */
function resolveValidation(
  policy: BackendTLSPolicy,
  configMaps: ReadonlyMap<string, ConfigMap>,
): Omit<Resolved, 'policy'> {
  const ns = policy.metadata.namespace ?? 'default';
  const v = policy.spec?.validation;
  const hostname = v?.hostname ?? '';
  // The upstream node verifies the certificate against server_name only: a policy that asks for
  // other names (BackendTLSPolicySANValidation) is refused rather than verified more loosely.
  if ((v?.subjectAltNames ?? []).length > 0) {
    const notAccepted = {
      reason: 'Invalid',
      message: 'validation.subjectAltNames is not supported (docs/kubernetes.md#backendtlspolicy)',
    };
    return { tls: 'invalid', notAccepted };
  }
  const refs = v?.caCertificateRefs ?? [];
  if (refs.length === 0) {
    if (v?.wellKnownCACertificates === 'System') return { tls: { tls: { server_name: hostname } } };
    const notAccepted = {
      reason: 'Invalid',
      message: `wellKnownCACertificates ${JSON.stringify(v?.wellKnownCACertificates ?? '')} is not supported (only System)`,
    };
    return { tls: 'invalid', notAccepted };
  }
  const pems: string[] = [];
  let refProblem: Problem | undefined;
  for (const ref of refs) {
    if ((ref.group ?? '') !== '' || (ref.kind ?? 'ConfigMap') !== 'ConfigMap') {
      refProblem ??= {
        reason: 'InvalidKind',
        message: `caCertificateRefs ${ref.group ?? ''}/${ref.kind ?? ''} ${ref.name}: only ConfigMap (core group) is supported`,
      };
      continue;
    }
    const pem = configMaps.get(key(ns, ref.name))?.data?.['ca.crt'];
    if (pem === undefined || !pem.includes('-----BEGIN CERTIFICATE-----')) {
      refProblem ??= {
        reason: 'InvalidCACertificateRef',
        message: `ConfigMap ${ns}/${ref.name} ${
          !configMaps.has(key(ns, ref.name))
            ? 'not found'
            : pem === undefined
              ? 'has no ca.crt'
              : 'ca.crt is not a PEM certificate'
        }`,
      };
      continue;
    }
    pems.push(pem);
  }
  if (refProblem === undefined) return { tls: { tls: { server_name: hostname, ca_pem: pems.join('\n') } } };
  // Connections using an invalid reference fail (500); all of them invalid: not accepted either.
  return {
    tls: 'invalid',
    refProblem,
    ...(pems.length === 0
      ? { notAccepted: { reason: 'NoValidCACertificate', message: refProblem.message } }
      : {}),
  };
}

const cond = (type: string, status: 'True' | 'False', p: Problem, g: number | undefined) => ({
  type,
  status,
  reason: p.reason,
  message: p.message,
  observedGeneration: g,
});

const targetsOf = (policy: BackendTLSPolicy) =>
  (policy.spec?.targetRefs ?? []).filter(
    (t) => (t.group ?? '') === '' && (t.kind ?? 'Service') === 'Service',
  );

export function backendTlsIndex(state: ClusterState): BackendTlsIndex {
  const configMaps = new Map(
    (state.configMaps ?? []).map((c) => [key(c.metadata.namespace, c.metadata.name), c]),
  );
  const resolved: Resolved[] = [];
  // The policy applied to each target: key(ns, service) + '#' + sectionName ('' = the whole Service).
  const applied = new Map<string, Resolved>();
  // Oldest policy wins a conflict on the same target and sectionName (the spec's tie-break:
  // creation, then namespace/name); the others are Accepted False, reason Conflicted.
  const policies = [...(state.backendTLSPolicies ?? [])].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name)),
  );
  for (const policy of policies) {
    const ns = policy.metadata.namespace ?? 'default';
    const r: Resolved = { policy, ...resolveValidation(policy, configMaps) };
    resolved.push(r);
    for (const t of targetsOf(policy)) {
      const k = `${key(ns, t.name)}#${t.sectionName ?? ''}`;
      const holder = applied.get(k);
      if (holder === undefined) applied.set(k, r);
      else
        r.notAccepted ??= {
          reason: 'Conflicted',
          message: `BackendTLSPolicy ${ns}/${holder.policy.metadata.name} (older) already targets Service ${t.name}${
            t.sectionName === undefined ? '' : ` port ${t.sectionName}`
          }`,
        };
    }
  }

  return {
    forBackend(ns, service, port) {
      // A policy naming the port (sectionName) takes precedence over one for the whole Service.
      return (
        applied.get(`${key(ns, service)}#${port.name ?? ''}`)?.tls ?? applied.get(`${key(ns, service)}#`)?.tls
      );
    },
    statuses(gateways, controllerName, now) {
      const out: StatusUpdate[] = [];
      for (const r of resolved) {
        const ns = r.policy.metadata.namespace ?? 'default';
        const names = new Set(targetsOf(r.policy).map((t) => t.name));
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
                [
                  r.notAccepted === undefined
                    ? cond('Accepted', 'True', { reason: 'Accepted', message: 'Applied' }, g)
                    : cond('Accepted', 'False', r.notAccepted, g),
                  r.refProblem === undefined
                    ? cond('ResolvedRefs', 'True', { reason: 'ResolvedRefs', message: 'Resolved' }, g)
                    : cond('ResolvedRefs', 'False', r.refProblem, g),
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
