// A status write of the controller, and the helpers every kind's status is built with.
import type { Condition } from './object-meta.js';
import type { CrdStatus } from './policy-crd.js';

export interface StatusUpdate {
  kind:
    | 'GatewayClass'
    | 'Gateway'
    | 'HTTPRoute'
    | 'GRPCRoute'
    | 'TLSRoute'
    | 'TCPRoute'
    | 'UDPRoute'
    | 'BackendTLSPolicy'
    | CrdStatus['kind'];
  plural:
    | 'gatewayclasses'
    | 'gateways'
    | 'httproutes'
    | 'grpcroutes'
    | 'tlsroutes'
    | 'tcproutes'
    | 'udproutes'
    | 'backendtlspolicies'
    | CrdStatus['plural'];
  /** Default gateway.networking.k8s.io (SwitchyardPolicy… : switchyard.dev, with their version). */
  group?: string;
  version?: string;
  namespace: string | undefined;
  name: string;
  status: Record<string, unknown>;
}

/** The map key of a namespaced object. */
export function key(ns: string | undefined, name: string): string {
  return `${ns ?? ''}/${name}`;
}

/** Keeps lastTransitionTime of a condition whose status did not change. */
export function conditions(
  previous: Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>[],
  now: string,
): Condition[] {
  return next.map((c) => {
    const old = previous?.find((p) => p.type === c.type);
    return {
      ...c,
      lastTransitionTime: old !== undefined && old.status === c.status ? old.lastTransitionTime : now,
    };
  });
}
