// The parts of the Kubernetes objects the controller reads (Gateway API v1, core/v1 Service and
// Secret, discovery.k8s.io/v1 EndpointSlice, gateway.networking.k8s.io/v1beta1 ReferenceGrant).
// Written from the API reference; only the fields used are typed.
import type {
  BackendTLSPolicy,
  ConfigMap,
  SwitchyardConsumer,
  SwitchyardGlobalRule,
  SwitchyardPolicy,
} from './crd-types.js';
import type { Condition, KObject } from './object-meta.js';

export type { Condition, KObject, ObjectMeta } from './object-meta.js';

export interface GatewayClass extends KObject {
  spec: { controllerName: string };
  status?: { conditions?: Condition[] };
}

export interface Listener {
  name: string;
  hostname?: string;
  port: number;
  protocol: string;
  allowedRoutes?: {
    namespaces?: { from?: 'Same' | 'All' | 'Selector'; selector?: LabelSelector };
    kinds?: { group?: string; kind: string }[];
  };
  tls?: {
    mode?: 'Terminate' | 'Passthrough';
    certificateRefs?: { group?: string; kind?: string; name: string; namespace?: string }[];
  };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

export interface Gateway extends KObject {
  spec: { gatewayClassName: string; listeners: Listener[] };
  status?: unknown;
}

export interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export interface HeaderMatch {
  type?: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

export interface RouteMatch {
  path?: { type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; value?: string };
  headers?: HeaderMatch[];
  queryParams?: HeaderMatch[];
  method?: string;
}

export interface HeaderFilter {
  set?: { name: string; value: string }[];
  add?: { name: string; value: string }[];
  remove?: string[];
}

export interface PathModifier {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}

export interface RouteFilter {
  type: string;
  requestHeaderModifier?: HeaderFilter;
  responseHeaderModifier?: HeaderFilter;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    path?: PathModifier;
    port?: number;
    statusCode?: number;
  };
  urlRewrite?: { hostname?: string; path?: PathModifier };
}

export interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
}

export interface RouteRule {
  matches?: RouteMatch[];
  filters?: RouteFilter[];
  backendRefs?: BackendRef[];
}

export interface HTTPRoute extends KObject {
  spec: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: RouteRule[] };
  status?: { parents?: unknown[] };
}

/** GRPCRoute (gateway.networking.k8s.io/v1): service/method and header matches. */
export interface GRPCRouteMatch {
  method?: { type?: 'Exact' | 'RegularExpression'; service?: string; method?: string };
  headers?: HeaderMatch[];
}

export interface GRPCRouteRule {
  name?: string;
  matches?: GRPCRouteMatch[];
  filters?: RouteFilter[];
  backendRefs?: BackendRef[];
}

export interface GRPCRoute extends KObject {
  spec: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: GRPCRouteRule[] };
  status?: { parents?: unknown[] };
}

/** TLSRoute, TCPRoute, UDPRoute (gateway.networking.k8s.io/v1alpha2): backends only; TLSRoute has hostnames. */
export interface L4Route extends KObject {
  spec: { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: { backendRefs?: BackendRef[] }[] };
  status?: { parents?: unknown[] };
}

export interface Service extends KObject {
  spec: { ports?: { name?: string; port: number; targetPort?: number | string; protocol?: string }[] };
}

export interface EndpointSlice extends KObject {
  addressType?: string;
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean | null } }[];
  ports?: { name?: string; port?: number; protocol?: string }[];
}

export interface ReferenceGrant extends KObject {
  spec: {
    from: { group: string; kind: string; namespace: string }[];
    to: { group: string; kind: string; name?: string }[];
  };
}

export type Namespace = KObject;

export interface Secret extends KObject {
  type?: string;
  /** base64 values */
  data?: Record<string, string>;
}

/** Everything the informers hold, as one snapshot. */
export interface ClusterState {
  gatewayClasses: GatewayClass[];
  gateways: Gateway[];
  httpRoutes: HTTPRoute[];
  services: Service[];
  endpointSlices: EndpointSlice[];
  referenceGrants: ReferenceGrant[];
  namespaces: Namespace[];
  secrets: Secret[];
  /** Optional kinds (their CRDs may not be installed): absent = none. */
  grpcRoutes?: GRPCRoute[];
  tlsRoutes?: L4Route[];
  tcpRoutes?: L4Route[];
  udpRoutes?: L4Route[];
  /** switchyard.dev/v1alpha1 (crd-types.ts) and BackendTLSPolicy: optional too. */
  switchyardPolicies?: SwitchyardPolicy[];
  switchyardConsumers?: SwitchyardConsumer[];
  switchyardGlobalRules?: SwitchyardGlobalRule[];
  backendTLSPolicies?: BackendTLSPolicy[];
  configMaps?: ConfigMap[];
}
