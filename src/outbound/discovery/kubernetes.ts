import type { Logger } from '../../core/logger.js';
import type { Informer } from '../../kubernetes/informer.js';
import type { EndpointSlice } from '../../kubernetes/types.js';
import { DiscoverySource, type Answer, type DiscoveredTarget } from './source.js';
import type { KubernetesDiscoveryOptions } from './spec.js';

/** The label that ties an EndpointSlice to its Service. */
const SERVICE_LABEL = 'kubernetes.io/service-name';

/**
 * A look-up that has no first list after this long fails (counted, logged, retried) while the
 * informer keeps trying; once listed, the watch's own retries carry on without failing look-ups.
 */
const FIRST_LIST_MS = 5000;

/**
 * A Service's EndpointSlices (`discovery.k8s.io/v1`), followed with the Gateway API
 * controller's list + watch (../../kubernetes/informer.ts: resourceVersion, bookmarks, a 410
 * lists again) over the Service's namespace; the slices whose `kubernetes.io/service-name` label
 * names the Service give the targets. An endpoint counts while `conditions.ready` is true or
 * absent; the port is the slice port of that name (a slice without it adds nothing), or the
 * number given. Each look-up waits for the next change the watch brings, so targets move as
 * soon as the API server tells, without polling.
 */
export class KubernetesSource extends DiscoverySource {
  readonly #options: KubernetesDiscoveryOptions;
  readonly #logger: Logger;
  #informer: Informer<EndpointSlice> | null = null;
  #version = 0;
  #seen = -1;
  #wake: (() => void) | null = null;

  constructor(options: KubernetesDiscoveryOptions, logger: Logger) {
    super(`kubernetes:${options.namespace}/${options.service}`, logger);
    this.#options = options;
    this.#logger = logger;
  }

  protected get maxRetryMs(): number {
    return 30_000;
  }

  protected async lookup(signal: AbortSignal): Promise<Answer> {
    const informer = this.#informer ?? (await this.#start(signal));
    const deadline = Date.now() + FIRST_LIST_MS;
    while (!informer.listed || this.#version === this.#seen) {
      if (signal.aborted) throw new Error('stopped');
      const left = deadline - Date.now();
      if (!informer.listed && left <= 0)
        throw new Error(`the EndpointSlices of ${this.#options.namespace} could not be listed yet`);
      await new Promise<void>((resolve) => {
        const timer = informer.listed ? undefined : setTimeout(() => done(), left);
        const done = () => {
          clearTimeout(timer);
          this.#wake = null;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    this.#seen = this.#version;
    return { targets: this.#targetsOf(informer.items), nextMs: 0 };
  }

  /** The client is loaded on first use: a gateway without this source never pays its import. */
  async #start(signal: AbortSignal): Promise<Informer<EndpointSlice>> {
    const { namespace, kubeconfig } = this.#options;
    const [{ Informer }, { loadKubeConfig }] = await Promise.all([
      import('../../kubernetes/informer.js'),
      import('../../config/kubeconfig.js'),
    ]);
    if (signal.aborted) throw new Error('stopped');
    const kc = loadKubeConfig(kubeconfig ?? undefined, process.env);
    const informer: Informer<EndpointSlice> = new Informer<EndpointSlice>(
      kc,
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        namespace,
      },
      this.#logger,
      () => {
        this.#version++;
        this.#wake?.();
      },
    );
    this.#informer = informer;
    signal.addEventListener('abort', () => informer.stop(), { once: true });
    informer.start();
    return informer;
  }

  #targetsOf(slices: readonly EndpointSlice[]): DiscoveredTarget[] {
    const { service, port } = this.#options;
    const seen = new Set<string>();
    const targets: DiscoveredTarget[] = [];
    for (const slice of slices) {
      if (slice.metadata.labels?.[SERVICE_LABEL] !== service) continue;
      const resolved = typeof port === 'number' ? port : slice.ports?.find((p) => p.name === port)?.port;
      if (resolved === undefined || !Number.isInteger(resolved) || resolved < 1 || resolved > 65535) continue;
      for (const endpoint of slice.endpoints ?? []) {
        const ready = endpoint.conditions?.ready;
        if (ready === false) continue;
        for (const address of endpoint.addresses ?? []) {
          const key = `${address}:${resolved}`;
          if (address === '' || seen.has(key)) continue;
          seen.add(key);
          targets.push({ host: address, port: resolved, weight: 1, priority: 0 });
        }
      }
    }
    return targets;
  }
}
