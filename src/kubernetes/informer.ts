// List + watch of one kind (in one namespace, or all): lists once, then watches from the list's
// resourceVersion with bookmarks asked for (`allowWatchBookmarks=true`); a closed watch resumes
// from the last resourceVersion seen (events and bookmarks both advance it), a 410 Gone (status
// code or ERROR event) lists again, and other errors retry with a doubling delay (200 ms to 30 s).
import { KubernetesObjectApi, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../core/logger.js';
import type { KObject } from './types.js';

export interface InformerSpec {
  apiVersion: string;
  kind: string;
  /** `/apis/<group>/<version>[/namespaces/<ns>]/<plural>` */
  path: string;
  namespace: string | undefined;
  /**
   * A kind whose CRD may be absent (TLSRoute, TCPRoute…): the versions to try in order. When the API
   * server serves none, the informer counts as listed (empty) and lists again every 30 s.
   */
  versions?: { apiVersion: string; path: string }[];
}

const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 30_000;

export class Informer<T extends KObject> {
  readonly spec: InformerSpec;
  readonly #objects = new Map<string, T>();
  #resourceVersion = '';
  #listed = false;
  #stopped = false;
  #backoff = 0;
  #abort: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #kc: KubeConfig;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  /** Relists so far (tests and logs). */
  lists = 0;
  /** The version listed and watched (one of `spec.versions` for an optional kind). */
  apiVersion: string;
  #path: string;

  constructor(kc: KubeConfig, spec: InformerSpec, logger: Logger, onChange: () => void) {
    this.#kc = kc;
    this.spec = spec;
    this.#logger = logger;
    this.#onChange = onChange;
    this.apiVersion = spec.apiVersion;
    this.#path = spec.path;
  }

  /** True once the first list has been read. */
  get listed(): boolean {
    return this.#listed;
  }

  get items(): T[] {
    return [...this.#objects.values()];
  }

  start(): void {
    this.#stopped = false;
    void this.#list();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#abort?.abort();
  }

  #retry(err: unknown, relist: boolean): void {
    if (this.#stopped) return;
    this.#backoff = this.#backoff === 0 ? MIN_BACKOFF_MS : Math.min(this.#backoff * 2, MAX_BACKOFF_MS);
    this.#logger.warn(
      { err, kind: this.spec.kind, namespace: this.spec.namespace, retryMs: this.#backoff },
      'kubernetes: list/watch failed; retrying',
    );
    this.#timer = setTimeout(() => (relist ? void this.#list() : void this.#watch()), this.#backoff);
  }

  async #list(): Promise<void> {
    if (this.#stopped) return;
    let list;
    try {
      list = await this.#listServed();
    } catch (err) {
      this.#retry(err, true);
      return;
    }
    if (this.#stopped) return;
    if (list === undefined) {
      // An optional kind no version of which is served: nothing to watch; look again later.
      this.#objects.clear();
      const first = !this.#listed;
      this.#listed = true;
      if (first) this.#onChange();
      this.#timer = setTimeout(() => void this.#list(), MAX_BACKOFF_MS);
      return;
    }
    this.lists++;
    this.#objects.clear();
    for (const item of list.items) {
      const object = item as unknown as T;
      this.#objects.set(`${object.metadata.namespace ?? ''}/${object.metadata.name}`, object);
    }
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.#listed = true;
    this.#onChange();
    void this.#watch();
  }

  /** Lists the kind, trying each of `spec.versions` in turn; undefined when none is served (404). */
  async #listServed(): Promise<Awaited<ReturnType<KubernetesObjectApi['list']>> | undefined> {
    const api = KubernetesObjectApi.makeApiClient(this.#kc);
    const versions = this.spec.versions ?? [{ apiVersion: this.spec.apiVersion, path: this.spec.path }];
    for (const v of versions) {
      try {
        const list = await api.list<KubernetesObject>(v.apiVersion, this.spec.kind, this.spec.namespace);
        this.apiVersion = v.apiVersion;
        this.#path = v.path;
        return list;
      } catch (err) {
        const e = err as { code?: number; message?: string };
        const absent = e.code === 404 || /Unrecognized API version and kind/.test(e.message ?? '');
        if (this.spec.versions === undefined || !absent) throw err;
      }
    }
    return undefined;
  }

  async #watch(): Promise<void> {
    if (this.#stopped) return;
    let gone = false;
    let healthy = false;
    const onEvent = (type: string, object: unknown) => {
      const o = object as T & { code?: number };
      if (type === 'ERROR') {
        if (o.code === 410) gone = true;
        return;
      }
      healthy = true;
      this.#backoff = 0;
      const rv = o.metadata?.resourceVersion;
      if (rv !== undefined && rv !== '') this.#resourceVersion = rv;
      if (type === 'BOOKMARK') return;
      const k = `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      if (type === 'DELETED') this.#objects.delete(k);
      else this.#objects.set(k, o);
      this.#onChange();
    };
    const onDone = (err: unknown) => {
      this.#abort = undefined;
      if (this.#stopped) return;
      const code = (err as { statusCode?: number; code?: number } | null)?.statusCode;
      if (gone || code === 410) {
        this.#logger.info(
          { kind: this.spec.kind, namespace: this.spec.namespace },
          'kubernetes: watch expired (410); listing again',
        );
        void this.#list();
      } else if (err !== null && err !== undefined && (err as { name?: string }).name !== 'TimeoutError')
        this.#retry(err, false);
      else if (!healthy && this.#backoff > 0) this.#retry(new Error('watch closed without events'), false);
      else void this.#watch();
    };
    try {
      this.#abort = await new Watch(this.#kc).watch(
        this.#path,
        { allowWatchBookmarks: true, resourceVersion: this.#resourceVersion },
        onEvent,
        onDone,
      );
    } catch (err) {
      this.#retry(err, false);
    }
  }
}
