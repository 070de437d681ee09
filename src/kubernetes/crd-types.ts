// The switchyard.dev/v1alpha1 kinds (deploy/helm/switchyard/crds/, docs/kubernetes.md#policy-graphs-switchyarddevv1alpha1)
// and the Gateway API BackendTLSPolicy with the ConfigMaps it names. Only the fields used are typed.
import type { EdgeConfig, NodeConfig, SupernodeParamSpec } from '../config/gateway.js';
import type { Condition, KObject } from './object-meta.js';

export const SWITCHYARD_GROUP = 'switchyard.dev';
export const SWITCHYARD_VERSION = 'v1alpha1';

/** `spec` is a supernode definition: one `input` boundary, the `output` boundary leads on. */
export interface SwitchyardPolicy extends KObject {
  spec?: {
    description?: string;
    params?: Record<string, SupernodeParamSpec>;
    nodes?: NodeConfig[];
    edges?: EdgeConfig[];
  };
  status?: { conditions?: Condition[] };
}

/** A credential field: a literal (non-secret fields) or a key of a Secret in the consumer's namespace. */
export type CredentialValue = string | boolean | { secretKeyRef: { name: string; key: string } };

export interface SwitchyardConsumer extends KObject {
  spec?: {
    description?: string;
    group?: string;
    labels?: Record<string, string>;
    credentials?: Record<string, Record<string, CredentialValue>>;
  };
  status?: { conditions?: Condition[] };
}

/** A SwitchyardPolicy of its namespace spliced into every served policy (docs/global-rules.md). */
export interface SwitchyardGlobalRule extends KObject {
  spec?: {
    policy: string;
    params?: Record<string, unknown>;
    phase?: 'request' | 'response';
  };
  status?: { conditions?: Condition[] };
}

export interface ConfigMap extends KObject {
  data?: Record<string, string>;
}

/** gateway.networking.k8s.io/v1 (or v1alpha3) BackendTLSPolicy. */
export interface BackendTLSPolicy extends KObject {
  spec?: {
    targetRefs?: { group?: string; kind?: string; name: string; sectionName?: string }[];
    validation?: {
      caCertificateRefs?: { group?: string; kind?: string; name: string }[];
      wellKnownCACertificates?: string;
      hostname?: string;
      subjectAltNames?: { type: 'Hostname' | 'URI'; hostname?: string; uri?: string }[];
    };
  };
  status?: { ancestors?: unknown[] };
}
