// A Kubernetes API server for tests: node:http, speaking the wire format a client sees for the
// kinds the Gateway API controller uses (src/kubernetes/). Discovery (/api, /apis,
// /apis/<group>/<version>), list (`kind: <Kind>List`, metadata.resourceVersion), watch
// (`?watch=true&resourceVersion=…&allowWatchBookmarks=true`: newline-delimited JSON events
// ADDED/MODIFIED/DELETED/BOOKMARK; an ERROR event carrying a 410 `Status` when the
// resourceVersion is older than the retained history), GET/POST/PUT/PATCH
// (application/merge-patch+json)/DELETE with resourceVersion conflicts (409), the `/status`
// subresource, metadata.generation bumped on spec changes only. Seeded from YAML manifests;
// `apply` and `remove` change objects during a test and notify the open watches.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string | undefined;
    generation?: number | undefined;
    uid?: string | undefined;
    creationTimestamp?: string | undefined;
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: unknown;
  status?: unknown;
  [key: string]: unknown;
}

interface ResourceType {
  group: string; // '' = core
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Kinds with a status subresource: the main endpoint ignores .status, /status changes only it. */
  status: boolean;
  /** Built-in kinds list their items without kind/apiVersion, as the real server does for typed lists. */
  builtin: boolean;
}

const TYPES: ResourceType[] = [
  {
    group: '',
    version: 'v1',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    status: true,
    builtin: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'services',
    kind: 'Service',
    namespaced: true,
    status: true,
    builtin: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'secrets',
    kind: 'Secret',
    namespaced: true,
    status: false,
    builtin: true,
  },
  {
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
    status: false,
    builtin: true,
  },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    plural: 'leases',
    kind: 'Lease',
    namespaced: true,
    status: false,
    builtin: true,
  },
  ...(['v1', 'v1beta1'] as const).flatMap((version) => [
    {
      group: 'gateway.networking.k8s.io',
      version,
      plural: 'gatewayclasses',
      kind: 'GatewayClass',
      namespaced: false,
      status: true,
      builtin: false,
    },
    {
      group: 'gateway.networking.k8s.io',
      version,
      plural: 'gateways',
      kind: 'Gateway',
      namespaced: true,
      status: true,
      builtin: false,
    },
    {
      group: 'gateway.networking.k8s.io',
      version,
      plural: 'httproutes',
      kind: 'HTTPRoute',
      namespaced: true,
      status: true,
      builtin: false,
    },
  ]),
  // The other route kinds (src/kubernetes/grpc-route.ts, stream-route.ts), in the versions their CRDs serve.
  ...(
    [
      ['grpcroutes', 'GRPCRoute', ['v1']],
      ['tlsroutes', 'TLSRoute', ['v1', 'v1alpha3', 'v1alpha2']],
      ['tcproutes', 'TCPRoute', ['v1alpha2']],
      ['udproutes', 'UDPRoute', ['v1alpha2']],
    ] as const
  ).flatMap(([plural, kind, versions]) =>
    versions.map((version) => ({
      group: 'gateway.networking.k8s.io',
      version,
      plural,
      kind,
      namespaced: true,
      status: true,
      builtin: false,
    })),
  ),
  ...(['v1', 'v1beta1'] as const).map((version) => ({
    group: 'gateway.networking.k8s.io',
    version,
    plural: 'referencegrants',
    kind: 'ReferenceGrant',
    namespaced: true,
    status: false,
    builtin: false,
  })),
  {
    group: '',
    version: 'v1',
    plural: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
    status: false,
    builtin: true,
  },
  ...(['v1', 'v1alpha3'] as const).map((version) => ({
    group: 'gateway.networking.k8s.io',
    version,
    plural: 'backendtlspolicies',
    kind: 'BackendTLSPolicy',
    namespaced: true,
    status: true,
    builtin: false,
  })),
  // Switchyard's own CRDs (deploy/helm/switchyard/crds/).
  ...(
    [
      ['switchyardpolicies', 'SwitchyardPolicy'],
      ['switchyardconsumers', 'SwitchyardConsumer'],
      ['switchyardglobalrules', 'SwitchyardGlobalRule'],
    ] as const
  ).map(([plural, kind]) => ({
    group: 'switchyard.dev',
    version: 'v1alpha1',
    plural,
    kind,
    namespaced: true,
    status: true,
    builtin: false,
  })),
];

/** The storage key of a kind: versions of one group share their objects, as a real server does. */
function storeKey(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  namespace: string | undefined;
  object: KubeObject;
}

interface OpenWatch {
  key: string;
  namespace: string | undefined;
  type: ResourceType;
  res: ServerResponse;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  /** The bearer token sent (each kubeconfig written with its own token tells clients apart). */
  token: string | undefined;
}

export interface KubeApiServerOptions {
  /** How often an open watch that asked for bookmarks gets one (default 1000 ms). */
  bookmarkIntervalMs?: number;
}

function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const base =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class KubeApiServer {
  readonly #server: Server;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  #rv = 1;
  readonly #history: WatchEvent[] = [];
  /** Watches from a resourceVersion below this answer 410 Gone. */
  #oldestRv = 1;
  readonly #watches = new Set<OpenWatch>();
  readonly #bookmarkMs: number;
  #bookmarkTimer: NodeJS.Timeout | undefined;
  readonly requests: RecordedRequest[] = [];
  url = '';

  private constructor(options: KubeApiServerOptions) {
    this.#bookmarkMs = options.bookmarkIntervalMs ?? 1000;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.#json(res, 500, status(500, 'InternalError', String(err)));
        else res.destroy();
      });
    });
  }

  static async start(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
    const server = new KubeApiServer(options);
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve));
    server.url = `http://127.0.0.1:${(server.#server.address() as AddressInfo).port}`;
    server.#bookmarkTimer = setInterval(() => server.#sendBookmarks(), server.#bookmarkMs);
    server.#bookmarkTimer.unref();
    return server;
  }

  /** A kubeconfig file pointing at this server (plain HTTP, a bearer token that is recorded, not checked). */
  writeKubeconfig(path: string, token = 'test-token'): string {
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: test`,
        `  cluster: { server: "${this.url}", insecure-skip-tls-verify: true }`,
        'users:',
        '- name: test',
        `  user: { token: ${token} }`,
        'contexts:',
        '- name: test',
        '  context: { cluster: test, user: test, namespace: default }',
        'current-context: test',
        '',
      ].join('\n'),
    );
    return path;
  }

  get resourceVersion(): number {
    return this.#rv;
  }

  /** Creates or replaces each object of a multi-document YAML text (status kept unless given). */
  applyYaml(text: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const doc of parseAllDocuments(text)) {
      const value = doc.toJS() as KubeObject | null;
      if (value === null || typeof value !== 'object') continue;
      out.push(this.apply(value));
    }
    return out;
  }

  /** Creates or replaces an object, as `kubectl apply` would (spec and labels; status only when given). */
  apply(object: KubeObject): KubeObject {
    const type = this.#typeOfObject(object);
    const ns = type.namespaced ? (object.metadata.namespace ?? 'default') : undefined;
    const existing = this.#get(type, ns, object.metadata.name);
    if (existing === undefined) return this.#create(type, ns, object);
    const next = { ...clone(object), metadata: { ...existing.metadata, ...clone(object.metadata) } };
    if (object.status === undefined && existing.status !== undefined) next.status = existing.status;
    delete next.metadata.resourceVersion;
    return this.#replace(type, ns, existing, next, false);
  }

  /** Deletes an object; true when it existed. */
  remove(kind: string, namespace: string | undefined, name: string): boolean {
    const type = TYPES.find((t) => t.kind === kind);
    if (type === undefined) throw new Error(`unknown kind ${kind}`);
    return this.#delete(type, type.namespaced ? namespace : undefined, name) !== undefined;
  }

  get(kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const type = TYPES.find((t) => t.kind === kind);
    if (type === undefined) throw new Error(`unknown kind ${kind}`);
    const found = this.#get(type, type.namespaced ? namespace : undefined, name);
    return found === undefined ? undefined : clone(found);
  }

  list(kind: string): KubeObject[] {
    const type = TYPES.find((t) => t.kind === kind);
    if (type === undefined) throw new Error(`unknown kind ${kind}`);
    return [...(this.#objects.get(storeKey(type))?.values() ?? [])].map(clone);
  }

  /** Forgets the watch history: a watch resumed from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.#history.length = 0;
    this.#oldestRv = this.#rv;
  }

  /** Ends every open watch stream (clients reconnect from their last resourceVersion). */
  dropWatches(): void {
    for (const watch of this.#watches) watch.res.end();
    this.#watches.clear();
  }

  async close(): Promise<void> {
    clearInterval(this.#bookmarkTimer);
    await this.stop();
  }

  /** True while the server accepts connections (between start/restart and stop). */
  get running(): boolean {
    return this.#server.listening;
  }

  /**
   * The API server goes away: open watches and connections are cut and new ones refused. The
   * objects stay; `apply`/`remove` still change them (as other writers would through another
   * API server replica) and `restart` serves them again on the same port.
   */
  async stop(): Promise<void> {
    if (!this.#server.listening) return;
    this.dropWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /**
   * Comes back on the same address. With `freshCache` (default true) the watch history is gone, as
   * in a restarted API server's watch cache: a watch resumed from before answers 410 Gone.
   */
  async restart(options: { freshCache?: boolean } = {}): Promise<void> {
    if (options.freshCache ?? true) this.compact();
    const port = Number(new URL(this.url).port);
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  // ---------------------------------------------------------------------------------------------

  #typeOfObject(object: KubeObject): ResourceType {
    const apiVersion = object.apiVersion ?? '';
    const slash = apiVersion.indexOf('/');
    const group = slash === -1 ? '' : apiVersion.slice(0, slash);
    const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
    const type = TYPES.find((t) => t.group === group && t.version === version && t.kind === object.kind);
    if (type === undefined) throw new Error(`unknown kind ${apiVersion} ${String(object.kind)}`);
    return type;
  }

  #bucket(type: ResourceType): Map<string, KubeObject> {
    let bucket = this.#objects.get(storeKey(type));
    if (bucket === undefined) {
      bucket = new Map();
      this.#objects.set(storeKey(type), bucket);
    }
    return bucket;
  }

  #get(type: ResourceType, ns: string | undefined, name: string): KubeObject | undefined {
    return this.#bucket(type).get(`${ns ?? ''}/${name}`);
  }

  #create(type: ResourceType, ns: string | undefined, object: KubeObject): KubeObject {
    const stored: KubeObject = clone(object);
    stored.apiVersion = apiVersionOf(type);
    stored.kind = type.kind;
    const rv = ++this.#rv;
    stored.metadata = {
      ...stored.metadata,
      ...(ns === undefined ? {} : { namespace: ns }),
      uid: randomUUID(),
      resourceVersion: String(rv),
      generation: 1,
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    if (!type.namespaced) delete stored.metadata.namespace;
    namespaceLabel(type, stored);
    this.#bucket(type).set(`${ns ?? ''}/${stored.metadata.name}`, stored);
    this.#emit(type, 'ADDED', stored, rv);
    return clone(stored);
  }

  #replace(
    type: ResourceType,
    ns: string | undefined,
    existing: KubeObject,
    next: KubeObject,
    statusOnly: boolean,
  ): KubeObject {
    const stored: KubeObject = clone(next);
    stored.apiVersion = apiVersionOf(type);
    stored.kind = type.kind;
    if (statusOnly) {
      const status = stored.status;
      Object.assign(stored, clone(existing));
      stored.status = status;
      if (status === undefined) delete stored.status;
    } else if (type.status) {
      // The main endpoint of a kind with a status subresource leaves the status alone.
      if (existing.status === undefined) delete stored.status;
      else stored.status = clone(existing.status);
    }
    // Identity fields belong to the server.
    stored.metadata = {
      ...stored.metadata,
      name: existing.metadata.name,
      uid: existing.metadata.uid,
      creationTimestamp: existing.metadata.creationTimestamp,
      generation: existing.metadata.generation,
    };
    if (ns !== undefined) stored.metadata.namespace = ns;
    namespaceLabel(type, stored);
    const changedSpec = !sameJson(withoutMeta(existing), withoutMeta(stored));
    if (
      sameJson(existing, {
        ...stored,
        metadata: { ...stored.metadata, resourceVersion: existing.metadata.resourceVersion },
      })
    )
      return clone(existing); // a no-op write keeps the resourceVersion, as the real server does
    if (changedSpec && !statusOnly) stored.metadata.generation = (existing.metadata.generation ?? 1) + 1;
    const rv = ++this.#rv;
    stored.metadata.resourceVersion = String(rv);
    this.#bucket(type).set(`${ns ?? ''}/${stored.metadata.name}`, stored);
    this.#emit(type, 'MODIFIED', stored, rv);
    return clone(stored);
  }

  #delete(type: ResourceType, ns: string | undefined, name: string): KubeObject | undefined {
    const key = `${ns ?? ''}/${name}`;
    const existing = this.#bucket(type).get(key);
    if (existing === undefined) return undefined;
    this.#bucket(type).delete(key);
    const rv = ++this.#rv;
    const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: String(rv) } };
    this.#emit(type, 'DELETED', gone, rv);
    return gone;
  }

  #emit(type: ResourceType, kind: WatchEvent['type'], object: KubeObject, rv: number): void {
    const event: WatchEvent = {
      rv,
      type: kind,
      key: storeKey(type),
      namespace: object.metadata.namespace,
      object: clone(object),
    };
    this.#history.push(event);
    for (const watch of this.#watches) this.#send(watch, event);
  }

  #send(watch: OpenWatch, event: WatchEvent): void {
    if (watch.key !== event.key) return;
    if (watch.namespace !== undefined && watch.namespace !== event.namespace) return;
    const object = { ...event.object, apiVersion: apiVersionOf(watch.type), kind: watch.type.kind };
    watch.res.write(`${JSON.stringify({ type: event.type, object })}\n`);
  }

  #sendBookmarks(): void {
    for (const watch of this.#watches) {
      if (!(watch as OpenWatch & { bookmarks?: boolean }).bookmarks) continue;
      const object = {
        kind: watch.type.kind,
        apiVersion: apiVersionOf(watch.type),
        metadata: { resourceVersion: String(this.#rv) },
      };
      watch.res.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
    }
  }

  #json(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async #body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    this.requests.push({
      method,
      path: url.pathname,
      query: url.searchParams,
      contentType: req.headers['content-type'],
      token: /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1],
    });
    const parts = url.pathname.split('/').filter((p) => p !== '');
    // Discovery.
    if (method === 'GET' && url.pathname === '/api') {
      this.#json(res, 200, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: this.url.slice(7) }],
      });
      return;
    }
    if (method === 'GET' && url.pathname === '/apis') {
      const groups = new Map<string, string[]>();
      for (const t of TYPES) {
        if (t.group === '') continue;
        const versions = groups.get(t.group) ?? [];
        if (!versions.includes(t.version)) versions.push(t.version);
        groups.set(t.group, versions);
      }
      this.#json(res, 200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [...groups].map(([name, versions]) => ({
          name,
          versions: versions.map((version) => ({ groupVersion: `${name}/${version}`, version })),
          preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
        })),
      });
      return;
    }
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === 'api' && parts.length >= 2) {
      group = '';
      version = parts[1] ?? '';
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 3) {
      group = parts[1] ?? '';
      version = parts[2] ?? '';
      rest = parts.slice(3);
    } else {
      this.#json(res, 404, status(404, 'NotFound', `the server could not find the requested resource`));
      return;
    }
    const inVersion = TYPES.filter((t) => t.group === group && t.version === version);
    if (inVersion.length === 0) {
      this.#json(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    if (rest.length === 0 && method === 'GET') {
      this.#json(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: group === '' ? version : `${group}/${version}`,
        resources: inVersion.flatMap((t) => [
          {
            name: t.plural,
            singularName: t.kind.toLowerCase(),
            namespaced: t.namespaced,
            kind: t.kind,
            verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
          },
          ...(t.status
            ? [
                {
                  name: `${t.plural}/status`,
                  singularName: '',
                  namespaced: t.namespaced,
                  kind: t.kind,
                  verbs: ['get', 'patch', 'update'],
                },
              ]
            : []),
        ]),
      });
      return;
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const type = inVersion.find((t) => t.plural === rest[0]);
    if (type === undefined || (namespace !== undefined && !type.namespaced)) {
      this.#json(res, 404, status(404, 'NotFound', `the server could not find the requested resource`));
      return;
    }
    const name = rest[1];
    const sub = rest[2];
    if (name === undefined) {
      if (method === 'GET') return this.#listOrWatch(type, namespace, url, res);
      if (method === 'POST') {
        const body = (await this.#body(req)) as KubeObject;
        const ns = type.namespaced ? (namespace ?? body.metadata.namespace ?? 'default') : undefined;
        if (this.#get(type, ns, body.metadata.name) !== undefined) {
          this.#json(
            res,
            409,
            status(
              409,
              'AlreadyExists',
              `${type.plural}.${type.group} "${body.metadata.name}" already exists`,
            ),
          );
          return;
        }
        this.#json(res, 201, this.#create(type, ns, body));
        return;
      }
      this.#json(res, 405, status(405, 'MethodNotAllowed', 'method not allowed'));
      return;
    }
    const existing = this.#get(type, namespace, name);
    const notFound = () =>
      this.#json(
        res,
        404,
        status(
          404,
          'NotFound',
          `${type.plural}${type.group === '' ? '' : `.${type.group}`} "${name}" not found`,
        ),
      );
    if (sub !== undefined && !(sub === 'status' && type.status)) {
      this.#json(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    const statusOnly = sub === 'status';
    if (method === 'GET') {
      if (existing === undefined) return notFound();
      this.#json(res, 200, { ...clone(existing), apiVersion: apiVersionOf(type), kind: type.kind });
      return;
    }
    if (method === 'DELETE') {
      const gone = this.#delete(type, namespace, name);
      if (gone === undefined) return notFound();
      this.#json(res, 200, gone);
      return;
    }
    if (method === 'PUT') {
      const body = (await this.#body(req)) as KubeObject;
      if (existing === undefined) return notFound();
      const wanted = body.metadata.resourceVersion;
      if (wanted !== undefined && wanted !== existing.metadata.resourceVersion) {
        this.#json(
          res,
          409,
          status(
            409,
            'Conflict',
            `Operation cannot be fulfilled on ${type.plural}${type.group === '' ? '' : `.${type.group}`} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          ),
        );
        return;
      }
      this.#json(res, 200, this.#replace(type, namespace, existing, body, statusOnly));
      return;
    }
    if (method === 'PATCH') {
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
      if (contentType !== 'application/merge-patch+json') {
        this.#json(
          res,
          415,
          status(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format: ${contentType ?? ''}`,
          ),
        );
        return;
      }
      const patch = await this.#body(req);
      if (existing === undefined) return notFound();
      const wanted = (patch as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
        ?.resourceVersion;
      if (wanted !== undefined && wanted !== existing.metadata.resourceVersion) {
        this.#json(res, 409, status(409, 'Conflict', `the object has been modified`));
        return;
      }
      const next = mergePatch(existing, patch) as KubeObject;
      this.#json(res, 200, this.#replace(type, namespace, existing, next, statusOnly));
      return;
    }
    this.#json(res, 405, status(405, 'MethodNotAllowed', 'method not allowed'));
  }

  #listOrWatch(type: ResourceType, namespace: string | undefined, url: URL, res: ServerResponse): void {
    const items = [...this.#bucket(type).values()].filter(
      (o) => namespace === undefined || o.metadata.namespace === namespace,
    );
    if (url.searchParams.get('watch') !== 'true' && url.searchParams.get('watch') !== '1') {
      this.#json(res, 200, {
        kind: `${type.kind}List`,
        apiVersion: apiVersionOf(type),
        metadata: { resourceVersion: String(this.#rv) },
        items: items.map((o) => {
          const item = clone(o);
          if (type.builtin) {
            delete item.apiVersion;
            delete item.kind;
          }
          return item;
        }),
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders(); // the client's watch resolves on the headers, before any event
    const watch: OpenWatch & { bookmarks?: boolean } = { key: storeKey(type), namespace, type, res };
    watch.bookmarks = url.searchParams.get('allowWatchBookmarks') === 'true';
    const from = url.searchParams.get('resourceVersion');
    if (from !== null && from !== '' && from !== '0') {
      const rv = Number(from);
      if (!Number.isFinite(rv) || rv < this.#oldestRv) {
        const gone = status(410, 'Expired', `too old resource version: ${from} (${this.#oldestRv})`);
        res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
        return;
      }
      for (const event of this.#history) if (event.rv > rv) this.#send(watch, event);
    } else {
      // No resourceVersion: the current state as ADDED events, then changes.
      for (const object of items) {
        const event: WatchEvent = {
          rv: Number(object.metadata.resourceVersion),
          type: 'ADDED',
          key: storeKey(type),
          namespace: object.metadata.namespace,
          object,
        };
        this.#send(watch, event);
      }
    }
    this.#watches.add(watch);
    const timeout = Number(url.searchParams.get('timeoutSeconds') ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      clearTimeout(timer);
      this.#watches.delete(watch);
    });
  }
}

/** What metadata.generation counts changes of: everything but metadata and status. */
function withoutMeta(object: KubeObject): unknown {
  const { metadata: _metadata, status: _status, apiVersion: _apiVersion, kind: _kind, ...rest } = object;
  return rest;
}

/** A real API server (≥ 1.22) sets `kubernetes.io/metadata.name` on every Namespace. */
function namespaceLabel(type: ResourceType, object: KubeObject): void {
  if (type.kind !== 'Namespace') return;
  object.metadata.labels = { ...object.metadata.labels, 'kubernetes.io/metadata.name': object.metadata.name };
}
