// What every Kubernetes object has: metadata and status conditions (types.ts re-exports them).

export interface ObjectMeta {
  name: string;
  namespace?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number | undefined;
  lastTransitionTime: string;
}

export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}
