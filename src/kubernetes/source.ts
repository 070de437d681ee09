// `config.source: kubernetes` (docs/kubernetes.md): informers on the Gateway API kinds, Services
// and EndpointSlices; every change (once each informer has listed) is translated into a
// gateway configuration, handed to the gateway's apply path, and — on the leader only — the
// statuses are written through the status subresource with a JSON merge patch.
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../config/kubeconfig.js';

export { loadKubeConfig } from '../config/kubeconfig.js';
import type { Logger } from '../core/logger.js';
import { Informer, type InformerSpec } from './informer.js';
import { LeaderElector } from './leader.js';
import { SWITCHYARD_GROUP, SWITCHYARD_VERSION } from './crd-types.js';
import type { PolicyCheck } from './policy-crd.js';
import { translateGrpcRoutes } from './grpc-route.js';
import { translateStreamRoutes } from './stream-route.js';
import { translate, type StatusUpdate, type Translation } from './translate.js';
import type { ClusterState, KObject } from './types.js';

export { ConfigSourceReadOnly } from './errors.js';

export interface KubernetesConfig {
  controller_name: string;
  kubeconfig?: string;
  port_offset: number;
  status_address?: string;
  watch_namespaces?: string[];
  leader_election: {
    enabled: boolean;
    lease_name: string;
    lease_namespace?: string;
    lease_duration_seconds?: number;
  };
}

const GW = 'gateway.networking.k8s.io';
type Kind = keyof ClusterState;
const KINDS: {
  state: Kind;
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** An optional kind (CRD maybe absent): the versions tried in order (informer.ts). */
  versions?: string[];
}[] = [
  {
    state: 'gatewayClasses',
    apiVersion: `${GW}/v1`,
    kind: 'GatewayClass',
    plural: 'gatewayclasses',
    namespaced: false,
  },
  { state: 'gateways', apiVersion: `${GW}/v1`, kind: 'Gateway', plural: 'gateways', namespaced: true },
  { state: 'httpRoutes', apiVersion: `${GW}/v1`, kind: 'HTTPRoute', plural: 'httproutes', namespaced: true },
  {
    state: 'referenceGrants',
    apiVersion: `${GW}/v1beta1`,
    kind: 'ReferenceGrant',
    plural: 'referencegrants',
    namespaced: true,
  },
  { state: 'services', apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  {
    state: 'endpointSlices',
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    plural: 'endpointslices',
    namespaced: true,
  },
  // Namespace labels, for `allowedRoutes.namespaces.from: Selector`.
  { state: 'namespaces', apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
  // kubernetes.io/tls Secrets named by HTTPS listeners' certificateRefs.
  { state: 'secrets', apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  // Route kinds beyond HTTPRoute (grpc-route.ts, stream-route.ts).
  ...(
    [
      ['grpcRoutes', 'GRPCRoute', 'grpcroutes', ['v1']],
      ['tlsRoutes', 'TLSRoute', 'tlsroutes', ['v1alpha2', 'v1alpha3', 'v1']],
      ['tcpRoutes', 'TCPRoute', 'tcproutes', ['v1alpha2']],
      ['udpRoutes', 'UDPRoute', 'udproutes', ['v1alpha2']],
    ] as const
  ).map(([state, kind, plural, versions]) => ({
    state,
    apiVersion: `${GW}/${versions[0]}`,
    kind,
    plural,
    namespaced: true,
    versions: [...versions],
  })),
  // BackendTLSPolicy and the ConfigMaps holding its CA certificates (backend-tls.ts).
  {
    state: 'backendTLSPolicies',
    apiVersion: `${GW}/v1`,
    kind: 'BackendTLSPolicy',
    plural: 'backendtlspolicies',
    namespaced: true,
    versions: ['v1', 'v1alpha3'],
  },
  { state: 'configMaps', apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  // switchyard.dev/v1alpha1 (policy-crd.ts; the CRDs ship in deploy/helm/switchyard/crds/).
  ...(
    [
      ['switchyardPolicies', 'SwitchyardPolicy', 'switchyardpolicies'],
      ['switchyardConsumers', 'SwitchyardConsumer', 'switchyardconsumers'],
      ['switchyardGlobalRules', 'SwitchyardGlobalRule', 'switchyardglobalrules'],
    ] as const
  ).map(([state, kind, plural]) => ({
    state,
    apiVersion: `${SWITCHYARD_GROUP}/${SWITCHYARD_VERSION}`,
    kind,
    plural,
    namespaced: true,
    versions: [SWITCHYARD_VERSION],
  })),
];

function groupOf(apiVersion: string): string {
  return apiVersion.slice(0, apiVersion.lastIndexOf('/'));
}

function pathOf(apiVersion: string, plural: string, namespace: string | undefined): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace === undefined ? `${base}/${plural}` : `${base}/namespaces/${namespace}/${plural}`;
}

export interface KubernetesSourceHooks {
  /** Applies a translation (validate → compile → swap, then the listener sockets); rejects when it does not compile. */
  apply(translation: Translation): Promise<void>;
  /** The TLS-passthrough, TCP and UDP listener sockets (src/stream/kubernetes-ports.ts); absent: none bound. */
  streams?: KubernetesStreamSockets;
}

/** The stream sockets of the translated TLS/TCP/UDP listeners, as the source drives them. */
export interface KubernetesStreamSockets {
  sync(streams: Translation['streams']): Promise<void>;
  addresses(): Map<string, AddressInfo>;
  /** Stops accepting; open connections get `graceMs` (default `timeouts.shutdown_timeout_seconds`). */
  close(graceMs?: number): Promise<void>;
}

export class KubernetesSource {
  readonly config: KubernetesConfig;
  readonly #kc: KubeConfig;
  readonly #logger: Logger;
  readonly #informers: { state: Kind; informer: Informer<KObject> }[] = [];
  readonly #leader: LeaderElector | undefined;
  readonly #statusAddress: string;
  /** Compiles SwitchyardPolicy graphs (src/plugins/check-policy-graph.ts, passed in); absent: taken as valid. */
  readonly #checkPolicy: PolicyCheck | undefined;
  #hooks: KubernetesSourceHooks | undefined;
  #streams: KubernetesStreamSockets | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  /** A sync is under way; #again: a change arrived meanwhile (→ one more sync after it). */
  #syncing = false;
  #again = false;
  #lastConfig = '';
  #stopped = false;
  /** Status bodies written (or found) last, by object: only changes are written. */
  readonly #written = new Map<string, string>();

  constructor(
    config: KubernetesConfig,
    logger: Logger,
    env: NodeJS.ProcessEnv,
    bindAddress: string,
    checkPolicy?: PolicyCheck,
  ) {
    this.config = config;
    this.#logger = logger;
    this.#kc = loadKubeConfig(config.kubeconfig, env);
    this.#statusAddress = config.status_address ?? env['POD_IP'] ?? bindAddress;
    this.#checkPolicy = checkPolicy;
    const namespaces = config.watch_namespaces ?? [undefined];
    for (const k of KINDS) {
      for (const ns of k.namespaced ? namespaces : [undefined]) {
        const spec: InformerSpec = {
          apiVersion: k.apiVersion,
          kind: k.kind,
          namespace: ns,
          path: pathOf(k.apiVersion, k.plural, ns),
          ...(k.versions === undefined
            ? {}
            : {
                versions: k.versions.map((v) => ({
                  apiVersion: `${groupOf(k.apiVersion)}/${v}`,
                  path: pathOf(`${groupOf(k.apiVersion)}/${v}`, k.plural, ns),
                })),
              }),
        };
        this.#informers.push({
          state: k.state,
          informer: new Informer(this.#kc, spec, logger, () => this.#schedule()),
        });
      }
    }
    const le = config.leader_election;
    this.#leader = le.enabled
      ? new LeaderElector(
          this.#kc,
          {
            name: le.lease_name,
            namespace: le.lease_namespace ?? env['POD_NAMESPACE'] ?? 'default',
            identity: env['POD_NAME'] ?? `${hostname()}-${process.pid}`,
            leaseDurationSeconds: le.lease_duration_seconds ?? 15,
          },
          logger,
          (leader) => {
            if (leader) {
              this.#written.clear();
              this.#schedule();
            }
          },
        )
      : undefined;
  }

  /** Why the gateway is not ready yet, or undefined once every informer has listed and the result is applied. */
  notReady(): string | undefined {
    const waiting = this.#informers.filter((i) => !i.informer.listed).map((i) => i.informer.spec.kind);
    if (waiting.length > 0)
      return `kubernetes: waiting for the first list of ${[...new Set(waiting)].join(', ')}`;
    if (this.#lastConfig === '') return 'kubernetes: the first configuration is not applied yet';
    return undefined;
  }

  /** Bound addresses of the TLS-passthrough, TCP and UDP sockets, by `tcp:<port>` / `udp:<port>` (declared). */
  streamAddresses(): Map<string, AddressInfo> {
    return this.#streams?.addresses() ?? new Map<string, AddressInfo>();
  }

  get leader(): boolean {
    return this.#leader === undefined ? true : this.#leader.leader;
  }

  start(hooks: KubernetesSourceHooks): void {
    this.#hooks = hooks;
    this.#streams = hooks.streams;
    for (const { informer } of this.#informers) informer.start();
    this.#leader?.start();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const { informer } of this.#informers) informer.stop();
    // Hands the Lease back (best effort, in the background): another replica takes over at once.
    void this.#leader?.stop();
    void this.#streams?.close();
  }

  state(): ClusterState {
    const state: ClusterState = {
      gatewayClasses: [],
      gateways: [],
      httpRoutes: [],
      services: [],
      endpointSlices: [],
      referenceGrants: [],
      namespaces: [],
      secrets: [],
      grpcRoutes: [],
      tlsRoutes: [],
      tcpRoutes: [],
      udpRoutes: [],
      switchyardPolicies: [],
      switchyardConsumers: [],
      switchyardGlobalRules: [],
      backendTLSPolicies: [],
      configMaps: [],
    };
    for (const { state: kind, informer } of this.#informers)
      (state[kind] as KObject[]).push(...informer.items);
    return state;
  }

  #schedule(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    if (this.#informers.some((i) => !i.informer.listed)) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // Changes during a sync (its own status writes among them) coalesce into ONE more sync
      // after it, which reads the state then: never a queue of syncs, one per 50 ms of the
      // running one (1,000 status writes used to chain hundreds of full translations).
      if (this.#syncing) {
        this.#again = true;
        return;
      }
      this.#syncing = true;
      this.#running = this.#running
        .then(() => this.#sync())
        .catch((err: unknown) => {
          this.#logger.warn({ err }, 'kubernetes: sync failed; the previous configuration keeps serving');
        })
        .finally(() => {
          this.#syncing = false;
          if (this.#again) {
            this.#again = false;
            this.#schedule();
          }
        });
    }, 50);
  }

  async #sync(): Promise<void> {
    if (this.#stopped || this.#hooks === undefined) return;
    const translation = translate(this.state(), {
      ...(this.#checkPolicy === undefined ? {} : { checkPolicy: this.#checkPolicy }),
      controllerName: this.config.controller_name,
      statusAddress: this.#statusAddress,
      otherRoutes: (state, ctx) => ({
        entries: translateGrpcRoutes(state.grpcRoutes ?? [], ctx),
        streams: translateStreamRoutes(state, ctx),
      }),
    });
    // A rotated certificate Secret changes `tls` only: applied too (the port's TLS listener swaps it in).
    const text = JSON.stringify({
      config: translation.config,
      ports: translation.ports,
      tls: translation.tls,
      streams: translation.streams,
    });
    if (text !== this.#lastConfig) {
      await this.#hooks.apply(translation);
      await this.#streams?.sync(translation.streams);
      this.#lastConfig = text;
    }
    if (this.leader) await this.#writeStatuses(translation.statuses);
  }

  async #writeStatuses(updates: StatusUpdate[]): Promise<void> {
    const api = this.#kc.makeApiClient(CustomObjectsApi);
    const current = this.state();
    const byKind = new Map<string, Map<string, KObject>>();
    for (const u of updates) {
      const id = `${u.plural}/${u.namespace ?? ''}/${u.name}`;
      const body = JSON.stringify(u.status);
      const k = KINDS.find((x) => x.kind === u.kind);
      const list: KObject[] = k === undefined ? [] : (current[k.state] ?? []);
      // The version the informer found served (optional kinds), else v1.
      const served = this.#informers.find((i) => i.informer.spec.kind === u.kind)?.informer.apiVersion;
      const version = served?.split('/')[1] ?? 'v1';
      let index = byKind.get(u.kind);
      if (index === undefined) {
        index = new Map(list.map((o) => [`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]));
        byKind.set(u.kind, index);
      }
      const live = index.get(`${u.namespace ?? ''}/${u.name}`) as
        (KObject & { status?: unknown }) | undefined;
      if (live === undefined) continue;
      if (
        JSON.stringify(live.status ?? {}) === body ||
        this.#written.get(id) === `${live.metadata.resourceVersion}|${body}`
      )
        continue;
      const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      const patch = { status: u.status };
      try {
        if (u.namespace === undefined)
          await api.patchClusterCustomObjectStatus(
            { group: u.group ?? GW, version, plural: u.plural, name: u.name, body: patch },
            options,
          );
        else
          await api.patchNamespacedCustomObjectStatus(
            {
              group: u.group ?? GW,
              version,
              namespace: u.namespace,
              plural: u.plural,
              name: u.name,
              body: patch,
            },
            options,
          );
        this.#written.set(id, `${live.metadata.resourceVersion}|${body}`);
      } catch (err) {
        this.#logger.warn({ err, object: id }, 'kubernetes: status write failed');
      }
    }
  }
}
