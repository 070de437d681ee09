import type { AddressInfo } from 'node:net';
import { existsSync, statSync } from 'node:fs';
import type { Runtime } from './engine/compile.js';
import { compileWith, compileWithAsync } from './plugins/compile-with.js';
import { OFF_THREAD_PARSE_BYTES, parseGatewayConfigOffThread } from './config/parse-off-thread.js';
import {
  decodeGatewayFile,
  readGatewayFile,
  readGatewayFileAsync,
  type GatewayFileBytes,
} from './config/gateway-file.js';
import { parseGatewayConfig, type GatewayConfig } from './config/gateway.js';
import { ConfigRejected, type ConfigIssue } from './config/schema-validate.js';
import type { SystemConfig } from './config/system.js';
import type { Logger } from './core/logger.js';
import { registry } from './plugins/index.js';
import { createDataPlaneHandler } from './server/data-plane.js';
import { startListener, type Listener } from './server/listener.js';
import { closeTunnels } from './outbound/websocket-relay.js';
import { DebugService } from './debug/service.js';
import { RuntimeSlot } from './server/runtime-slot.js';
import { watchConfigFile, type ConfigWatcher } from './config/watch.js';
import { EtcdConfigSource, EtcdConflict, type EtcdSnapshot } from './config/etcd-source.js';
import type { GatewayMetrics, NodeSample, RequestFinished } from './observability/metrics.js';
import type { GatewayTelemetry } from './telemetry/index.js';
import type { NodeSpans } from './engine/run.js';
import type { GatewayScope } from './core/plugin.js';
import { createGatewayScope } from './observability/gateway-scope.js';
import { AcmeManager, acmeConfigOf, acmeStoreIssues } from './acme/index.js';
import { registerAcmeMetrics } from './acme/metrics.js';
import { answerHttp01 } from './acme/http01-responder.js';
import { registerGatewaySeries } from './observability/gateway-series.js';
import { observeRequests, type RequestObserver } from './observability/access-log.js';
import { configurePools } from './outbound/pool-registry.js';
import { resolveCompatNames, useCompatNames } from './config/compat-names.js';
import type { EtcdConfigHistory, PreparedVersion } from './config/etcd-history.js';
import { ConfigHistory, currentActor, type HistoryLog } from './config/history.js';
import { secretsOf } from './config/secrets/binding.js';
import { checkGatewayShape, emptyGatewayConfig } from './config/gateway.js';
import { ConfigSourceReadOnly } from './kubernetes/errors.js';
import { LISTENER_PORT_HEADER } from './kubernetes/translate.js';
import type { KubernetesSource } from './kubernetes/source.js';
import { PortCertificates } from './kubernetes/certificates.js';
import { KubernetesStreams } from './stream/kubernetes-ports.js';
import type { Translation } from './kubernetes/translate.js';
import type { RequestHandler } from './server/listener.js';

export interface GatewayOptions {
  system: SystemConfig;
  /** Path of gateway.yaml; absent for a gateway fed only through `apply`. */
  gatewayPath?: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /** Set for `config.source: etcd`: admin writes go there, and its watch drives reloads. */
  etcd?: EtcdConfigSource;
  /** Set for `config.source: kubernetes`: its informers drive the configuration (docs/kubernetes.md). */
  kubernetes?: KubernetesSource;
  /** `workers`: swaps local counters for gateway-wide ones (see GatewayScopeOptions.wrapShared). */
  wrapShared?: (key: string, local: unknown) => unknown;
  /** A `workers` worker: serve only; the primary watches, reloads and renews certificates. */
  dataPlaneOnly?: boolean;
  /** The primary of `workers: N`: serves no requests, so it runs no event-loop lag monitor (docs/workers.md). */
  controlPlaneOnly?: boolean;
  /** `workers`: runs inside the serialized apply, after the swap; an apply resolves once it does. */
  onApplied?: (runtime: Runtime, source: ApplySource) => Promise<void>;
  /** OTLP spans and access records (system.yaml `telemetry.otlp`, src/telemetry/); absent = none. */
  telemetry?: GatewayTelemetry;
}

export type ApplySource = 'startup' | 'file' | 'signal' | 'admin' | 'etcd' | 'kubernetes' | 'secrets';

/** Returned by an apply function that finds nothing to change. */
const UNCHANGED = Symbol('unchanged');
/** An etcd write lost a race on a resource it touches: read again and re-run the edit. */
const RETRY = Symbol('retry');
/** Tries of one Admin write against etcd before it answers 409 `conflict`. */
const ETCD_WRITE_ATTEMPTS = 5;

/**
 * The composition root: owns the current runtime, the data-plane listener and
 * the one apply path (validate → compile → swap) every config change takes.
 */
export class Gateway {
  readonly system: SystemConfig;
  readonly logger: Logger;
  readonly gatewayPath: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  /** Debug traces and the sandbox (system.yaml `debug`, read once at startup). */
  readonly debug: DebugService;
  readonly metrics: GatewayMetrics;
  /** Outlives runtime swaps: local limit counters and the local response cache live here. */
  readonly scope: GatewayScope<GatewayMetrics>;
  /** The node types this gateway compiles with (the sandbox reads their ports). */
  readonly plugins = registry;
  /** Every applied configuration, versioned (docs/config-as-code.md#history). */
  readonly history: HistoryLog;
  /** The history when it is kept in etcd (`config.source: etcd` with an Admin API; docs/etcd.md#history). */
  readonly #etcdHistory: EtcdConfigHistory | undefined;
  #slot: RuntimeSlot;
  #listener: Listener | undefined;
  #watcher: ConfigWatcher | undefined;
  /** Serializes applies so two writers never interleave. */
  #applying: Promise<unknown> = Promise.resolve();
  /** The bytes of gateway.yaml the running configuration came from (or Admin persist wrote). */
  #lastAppliedFile: GatewayFileBytes | undefined;
  /** The file's last reload was rejected: the next good one logs that it is fixed. */
  #fileBroken = false;
  readonly #etcd: EtcdConfigSource | undefined;
  readonly #kubernetes: KubernetesSource | undefined;
  /** `config.source: kubernetes`: one socket per declared Gateway listener port (port + port_offset). */
  readonly #portListeners = new Map<number, Promise<Listener>>();
  /** Their certificates, for the HTTPS ones (from Secrets; swapped in on rotation). */
  readonly #portCertificates = new Map<number, PortCertificates>();
  #dataPlane: { handle: RequestHandler } | undefined;
  #etcdWatch: { close(): void } | undefined;
  /** Automatic data-plane certificates; undefined when system.yaml has no `acme:` block. */
  readonly acme: AcmeManager | undefined;
  /** Metrics and the access log at request completion (docs/logging.md#access-log). */
  #observer: RequestObserver | undefined;
  readonly #onApplied: GatewayOptions['onApplied'];
  readonly #telemetry: GatewayTelemetry | undefined;
  readonly #dataPlaneOnly: boolean;
  /** What `/metrics` serves: this process's registry, or every worker's aggregated (src/cluster/). */
  renderMetrics: () => Promise<{ contentType: string; body: string }> = () => this.metrics.render();

  private constructor(options: GatewayOptions, runtime: Runtime, scope: GatewayScope<GatewayMetrics>) {
    this.scope = scope;
    this.metrics = scope.metrics;
    this.metrics.setNodeSource(() => nodeSamples(this.#slot.runtime));
    this.system = options.system;
    this.debug = new DebugService(options.system.debug);
    this.logger = options.logger;
    this.gatewayPath = options.gatewayPath;
    this.env = options.env ?? process.env;
    this.#etcd = options.etcd;
    this.#kubernetes = options.kubernetes;
    this.#onApplied = options.onApplied;
    this.#telemetry = options.telemetry;
    this.#dataPlaneOnly = options.dataPlaneOnly === true;
    // With etcd, the history lives beside the prefix: one for every gateway on it (docs/etcd.md#history).
    this.#etcdHistory =
      options.etcd === undefined || this.#dataPlaneOnly || options.system.admin === undefined
        ? undefined
        : options.etcd.history({
            maxVersions: options.system.admin.history?.max_versions,
            logger: options.logger,
          });
    this.history =
      this.#etcdHistory ??
      new ConfigHistory({
        dir:
          // Only a gateway with an Admin API writes it (that is where it is read).
          options.gatewayPath === undefined || this.#dataPlaneOnly || options.system.admin === undefined
            ? undefined
            : `${options.gatewayPath}.history`,
        maxVersions: options.system.admin?.history?.max_versions,
        logger: options.logger,
      });
    this.#slot = new RuntimeSlot(runtime);
    const acme = acmeConfigOf(options.system);
    this.acme =
      acme === undefined
        ? undefined
        : new AcmeManager({
            config: acme,
            tls: options.system.tls,
            adminTls: options.system.admin?.tls,
            logger: options.logger,
            stores: () => this.#slot.runtime.stores,
          });
    const manager = this.acme;
    if (manager !== undefined) registerAcmeMetrics(this.metrics.registry, () => manager.samples());
    const series = { runtime: () => this.#slot.runtime, inflight: () => this.inflight };
    const eventLoopLag = options.controlPlaneOnly !== true;
    registerGatewaySeries(this.metrics.registry, { ...series, tls: options.system.tls, eventLoopLag });
  }

  /**
   * `config.source: etcd`: loads the configuration from etcd (seeding an
   * empty prefix from the local gateway.yaml, when there is one) and
   * compiles it. Throws EtcdUnavailable or ConfigRejected.
   */
  static async createFromEtcd(options: GatewayOptions & { etcd: EtcdConfigSource }): Promise<Gateway> {
    const path = options.gatewayPath;
    const config = await options.etcd.loadOrSeed(() =>
      path !== undefined && existsSync(path)
        ? parseGatewayConfig(decodeGatewayFile(readGatewayFile(path)))
        : undefined,
    );
    const loadedAt = options.etcd.lastReadRevision;
    await secretsOf(options.env ?? process.env)?.prepare(config);
    const gateway = Gateway.create(options, config, loadedAt);
    // The startup version reads the history in etcd first: a restart continues its numbering.
    await gateway.history.flushed();
    return gateway;
  }

  /**
   * `config.source: kubernetes`: starts with an empty configuration; the informers apply the
   * cluster's once every kind has been listed (until then `notReady()` says why).
   */
  static createFromKubernetes(options: GatewayOptions & { kubernetes: KubernetesSource }): Gateway {
    return Gateway.create(options, emptyGatewayConfig());
  }

  /** Why `/readyz` must answer 503 beyond an empty route table (the Kubernetes first sync), if anything. */
  notReady(): string | undefined {
    return this.#kubernetes?.notReady();
  }

  /** Compiles the initial configuration; throws ConfigRejected when it is invalid. */
  static create(options: GatewayOptions, initial?: GatewayConfig, loadedAt?: string): Gateway {
    let file: GatewayFileBytes | undefined;
    let config = initial;
    if (config === undefined) {
      if (options.gatewayPath === undefined)
        throw new Error('either a gateway config or its path is required');
      file = readGatewayFile(options.gatewayPath);
      config = parseGatewayConfig(decodeGatewayFile(file));
    }
    useCompatNames(resolveCompatNames(options.system.compat));
    const scope = createGatewayScope({
      cacheMaxEntries: options.system.cache.max_entries,
      ...(options.wrapShared === undefined ? {} : { wrapShared: options.wrapShared }),
    });
    configurePools({
      maxConnectionsPerTarget: options.system.upstream.max_connections_per_target,
      http1Client: options.system.upstream.http1_client,
    });
    const env = options.env ?? process.env;
    const runtime = compileWith(config, options.logger, env, options.gatewayPath, scope);
    const acmeIssues = acmeStoreIssues(options.system, runtime.stores.names);
    if (acmeIssues.length > 0) {
      void runtime.close();
      throw new ConfigRejected(acmeIssues);
    }
    for (const warning of runtime.warnings) options.logger.warn(warning);
    const gateway = new Gateway(options, runtime, scope);
    gateway.#lastAppliedFile = file;
    gateway.metrics.configApplied('startup');
    void gateway.#record(runtime.config, 'startup', loadedAt);
    return gateway;
  }

  get runtime(): Runtime {
    return this.#slot.runtime;
  }

  /** Requests currently running on the current runtime. */
  get inflight(): number {
    return this.#slot.inflight;
  }

  /** Compiles without swapping: the dry run behind validate endpoints. */
  compile(config: GatewayConfig): Runtime {
    return compileWith(config, this.logger, this.env, this.gatewayPath, this.scope);
  }

  /**
   * Validates and compiles `config`, persists it for admin writes
   * (`config.persist`), then swaps it in. A rejected config is logged at WARN
   * and leaves the running one and the file untouched. A function receives the
   * current config inside the serialized section and returns the candidate, so
   * read-modify-write callers cannot lose each other's change. With etcd, an
   * admin function receives what etcd holds now, and only the resources it
   * changed are written, each guarded by the mod_revision it was read at; a
   * write that loses a race is re-run on a fresh read (EtcdConflict after 5 tries).
   */
  apply(
    config:
      | GatewayConfig
      | ((
          current: GatewayConfig,
        ) => GatewayConfig | typeof UNCHANGED | Promise<GatewayConfig | typeof UNCHANGED>),
    source: ApplySource,
  ): Promise<Runtime> {
    // F-4: with etcd, an Admin write is applied to what etcd holds now (not only what the watch
    // delivered) and commits only what it changed, guarded by mod_revision; lost races are re-run.
    const etcd = source === 'admin' ? this.#etcd : undefined;
    // The cluster is the source of truth: an Admin/MCP write would be overwritten by the next sync.
    if (source === 'admin' && this.#kubernetes !== undefined)
      return Promise.reject(new ConfigSourceReadOnly('kubernetes'));
    const run = this.#applying.then(async () => {
      for (let attempt = 1; ; attempt++) {
        const applied = await this.#applyOnce(config, source, etcd, attempt);
        if (applied !== RETRY) return applied;
      }
    });
    this.#applying = run.catch(() => undefined);
    return run;
  }

  async #applyOnce(
    config: Parameters<Gateway['apply']>[0],
    source: ApplySource,
    etcd: EtcdConfigSource | undefined,
    attempt: number,
  ): Promise<Runtime | typeof RETRY> {
    let candidate: GatewayConfig;
    let runtime: Runtime;
    let snapshot: EtcdSnapshot | undefined;
    try {
      snapshot = await etcd?.read();
      const base = snapshot?.config ?? this.runtime.config;
      const next = typeof config === 'function' ? await config(base) : config;
      if (next === UNCHANGED) return this.runtime;
      candidate = snapshot === undefined ? next : EtcdConfigSource.arrange(snapshot.config, next);
      // In slices: requests on the running configuration keep being served meanwhile.
      // Unchanged policies keep their compiled form (src/engine/compile.ts, `reusable`).
      runtime = await compileWithAsync(
        candidate,
        this.logger,
        this.env,
        this.gatewayPath,
        this.scope,
        this.runtime,
      );
    } catch (err) {
      if (err instanceof ConfigRejected) {
        this.metrics.configRejected(source);
        this.logger.warn(
          { source, errors: err.issues },
          'configuration rejected; the previous one keeps serving',
        );
      }
      throw err;
    }
    if (source === 'admin' && this.gatewayPath !== undefined && this.#persists()) {
      try {
        // Loaded on the first admin write: it needs the `yaml` package, which most starts never do.
        const { persistGatewayConfig } = await import('./config/persist.js');
        await persistGatewayConfig(this.gatewayPath, candidate, (bytes) => this.noteWrittenFile(bytes));
      } catch (err) {
        void runtime.close();
        this.logger.error({ err, path: this.gatewayPath }, 'cannot persist the configuration; not applied');
        throw err;
      }
    }
    let version: PreparedVersion | undefined;
    if (etcd !== undefined && snapshot !== undefined) {
      try {
        // The history version goes in the same transaction as the resources (docs/etcd.md#history).
        const actor = currentActor();
        version = await this.#etcdHistory?.prepare(
          snapshot.config,
          candidate,
          actor?.via ?? source,
          actor?.user ?? null,
          snapshot.revision,
          actor?.summary,
        );
        await etcd.commit(snapshot, candidate, version);
      } catch (err) {
        void runtime.close();
        if (err instanceof EtcdConflict && attempt < ETCD_WRITE_ATTEMPTS) {
          this.logger.debug({ resources: err.resources, attempt }, 'etcd write lost a race; retrying');
          return RETRY;
        }
        if (err instanceof EtcdConflict)
          this.logger.warn({ resources: err.resources, prefix: etcd.prefix }, 'etcd write refused: conflict');
        else
          this.logger.error(
            { err, prefix: etcd.prefix },
            'cannot write the configuration to etcd; not applied',
          );
        throw err;
      }
    }
    for (const warning of runtime.warnings) this.logger.warn(warning);
    this.swap(runtime);
    this.metrics.configApplied(source);
    if (version !== undefined) this.#etcdHistory?.settle(version);
    else await this.#record(runtime.config, source, this.#etcd?.lastReadRevision);
    this.logger.info(
      { source, routes: runtime.router.size, policies: runtime.policies.size, compiled: runtime.compiled },
      'configuration applied',
    );
    await this.#onApplied?.(runtime, source);
    return runtime;
  }

  /** One history version per applied configuration; an Admin API or MCP call names its author. */
  async #record(config: GatewayConfig, source: ApplySource, loadedAt?: string): Promise<void> {
    if (this.#dataPlaneOnly) return;
    const actor = source === 'admin' ? currentActor() : undefined;
    await this.history.record(config, actor?.via ?? source, actor?.user ?? null, {
      summary: actor?.summary,
      loadedAt,
    });
  }

  /** Admin writes go back to gateway.yaml for the file source unless `config.persist: false`. */
  #persists(): boolean {
    return this.system.config.persist && this.system.config.source === 'file';
  }

  /** Re-reads the configuration from its source (gateway.yaml, or etcd) and applies it. */
  reload(source: ApplySource): Promise<Runtime> {
    // config.source kubernetes: the informers keep the configuration current; nothing to re-read.
    if (this.#kubernetes !== undefined) return Promise.resolve(this.runtime);
    return this.#etcd === undefined ? this.reloadFromFile(source) : this.reloadFromEtcd(source);
  }

  /** Re-reads the etcd prefix and applies it when it differs from the running configuration. */
  reloadFromEtcd(source: ApplySource = 'etcd'): Promise<Runtime> {
    const etcd = this.#etcd;
    if (etcd === undefined) return Promise.reject(new Error('the configuration source is not etcd'));
    // Read inside the serialized section, so a load never lands after a newer admin write.
    return this.apply(async (current) => {
      const loaded = await etcd.load();
      return EtcdConfigSource.same(loaded, current) ? UNCHANGED : loaded;
    }, source);
  }

  /**
   * Re-reads gateway.yaml and applies it; same path as file changes and SIGHUP. `watcherEvent`:
   * called for a file-change event, which is skipped when the file is unreadable (mid-rename) or
   * holds the text already applied; an explicit reload (Admin API, MCP, SIGHUP) always applies
   * the file, also over live changes it lacks.
   */
  async reloadFromFile(source: ApplySource = 'file', watcherEvent = false): Promise<Runtime> {
    if (this.gatewayPath === undefined)
      throw new ConfigRejected([{ path: '', message: 'no gateway config path' }]);
    const path = this.gatewayPath;
    let file: GatewayFileBytes | undefined;
    let unchanged = false;
    let unreadable = false;
    // Read inside the serialized section: an admin write in flight finishes (renames) first.
    let runtime: Runtime;
    try {
      runtime = await this.apply(async () => {
        // Not readFileSync: reading a large gateway.yaml would stall requests in flight.
        const read = readGatewayFileAsync(path);
        // A watcher event for an unreadable file (mid-rename) is ignored; the next event reads it.
        const current = watcherEvent ? await read.catch(() => undefined) : await read;
        if (current === undefined) {
          unreadable = true;
          return UNCHANGED;
        }
        file = current;
        // A watcher event for the text already running (applied by a SIGHUP, or restored): nothing to do.
        unchanged = watcherEvent && this.#lastAppliedFile?.equals(file) === true;
        return unchanged ? UNCHANGED : parseGatewayConfigOffThread(file);
      }, source);
    } catch (err) {
      if (err instanceof ConfigRejected) this.#fileBroken = true;
      throw err;
    }
    if (unreadable) return runtime;
    this.#lastAppliedFile = file;
    this.#noteFileFixed(unchanged);
    return runtime;
  }

  private swap(runtime: Runtime): void {
    const previous = this.#slot;
    this.#slot = new RuntimeSlot(runtime);
    previous.retire();
  }

  /** Starts the data-plane listener (and the file watcher when a path is known). */
  async listen(): Promise<AddressInfo> {
    const dataPlane = createDataPlaneHandler({
      current: () => this.#slot,
      maxBodyBytes: this.system.listener.max_request_body_bytes,
      maxHops: this.system.listener.max_hops,
      rules: {
        headersWithUnderscores: this.system.listener.headers_with_underscores,
        allowTrace: this.system.listener.allow_trace,
      },
      hooks: { logger: this.logger, nodeError: this.metrics.nodeError, ...spansOf(this.#telemetry) },
      onFinished: withTelemetry(
        (this.#observer = observeRequests(this.metrics.requestFinished, this.system, this.logger)).onFinished,
        this.#telemetry,
      ),
      ...(this.debug.tap === undefined ? {} : { debug: this.debug.tap }),
    });
    await this.acme?.prepare();
    const listener = await startListener(
      {
        label: 'data plane',
        bind: this.system.listener.bind,
        port: this.system.listener.port,
        tls: this.system.tls,
        http2: this.system.http2.enabled,
        http2Limits: this.system.http2,
        maxConnections: this.system.listener.max_connections,
        http1Server: this.system.listener.http1_server,
        timeouts: this.system.timeouts,
        logger: this.logger,
        beforeCut: closeTunnels,
        managedCertificates: this.acme,
      },
      // HTTP-01 validations are answered before routing (docs/acme.md#http-01).
      this.acme === undefined
        ? dataPlane.handle
        : (req, res) => answerHttp01(this.acme, req, res) || dataPlane.handle(req, res),
      dataPlane.handleUpgrade,
    );
    this.#listener = listener;
    this.#dataPlane = dataPlane;
    this.#startWatching();
    return listener.address;
  }

  /** `workers`: the primary serves no traffic but keeps the configuration and certificates current. */
  async serveControlPlane(): Promise<void> {
    await this.acme?.prepare();
    this.#startWatching();
  }

  #startWatching(): void {
    if (this.#dataPlaneOnly) return;
    this.acme?.start();
    if (this.gatewayPath !== undefined && this.system.config.source === 'file' && this.system.config.watch) {
      this.#watcher = watchConfigFile(this.gatewayPath, 500, () => this.onFileChange());
    }
    if (this.#etcd !== undefined) this.#etcdWatch = this.#watchEtcd(this.#etcd);
    this.#kubernetes?.start({
      streams: new KubernetesStreams(
        this.logger,
        this.system.listener.bind,
        this.#kubernetes.config.port_offset,
        this.system.timeouts,
      ),
      apply: async (translation) => {
        // Through the same path as a file or etcd change: schema check, compile, swap.
        await this.apply(checkGatewayShape(structuredClone(translation.config)), 'kubernetes');
        await this.#syncPorts(translation.ports, translation.tls);
      },
    });
  }

  /**
   * One listener per declared Gateway port, bound at port + `port_offset` on `listener.bind`; each
   * stamps its declared port on every request (LISTENER_PORT_HEADER, a client's value overwritten),
   * which is what the translated routes match on. Ports no Gateway declares any more are closed.
   */
  async #syncPorts(ports: number[], tls: Translation['tls']): Promise<void> {
    const dataPlane = this.#dataPlane;
    const kubernetes = this.#kubernetes;
    if (dataPlane === undefined || kubernetes === undefined) return;
    const wanted = new Set(ports);
    const unbound: Promise<void>[] = [];
    for (const [port, listener] of this.#portListeners) {
      // HTTPS ports: a rotated certificate is swapped in; plaintext ↔ TLS or other SNI names rebuild the socket.
      const certs = tls[port];
      const held = this.#portCertificates.get(port);
      if (wanted.has(port) && (certs === undefined ? held === undefined : held?.update(certs) === true))
        continue;
      this.#portListeners.delete(port);
      this.#portCertificates.delete(port);
      // close() unbinds at once (then drains): a socket rebuilt on the same port binds after it.
      unbound.push(
        listener
          .then(
            (l) => void l.close(this.system.timeouts.shutdown_timeout_seconds * 1000).catch(() => undefined),
          )
          .catch(() => undefined),
      );
    }
    await Promise.all(unbound);
    for (const port of wanted) {
      if (this.#portListeners.has(port)) continue;
      const declared = String(port);
      const certs = tls[port];
      const managed = certs === undefined ? undefined : new PortCertificates(certs);
      if (managed !== undefined) this.#portCertificates.set(port, managed);
      const started = startListener(
        {
          label: `gateway listener port ${port}`,
          bind: this.system.listener.bind,
          port: port + kubernetes.config.port_offset,
          ...(managed === undefined
            ? {}
            : {
                tls: {
                  min_version: '1.2' as const,
                  client_cert_required: false,
                  acme: {},
                  sni_certs: managed.serverNames.map((server_name) => ({ server_name, acme: {} })),
                },
                managedCertificates: managed,
              }),
          http2: this.system.http2.enabled,
          http2Limits: this.system.http2,
          maxConnections: this.system.listener.max_connections,
          http1Server: this.system.listener.http1_server,
          timeouts: this.system.timeouts,
          logger: this.logger,
          beforeCut: closeTunnels,
        },
        (req, res) => {
          req.headers[LISTENER_PORT_HEADER] = declared;
          dataPlane.handle(req, res);
        },
      );
      this.#portListeners.set(port, started);
      try {
        await started;
      } catch (err) {
        this.#portListeners.delete(port);
        this.logger.error(
          { err, port, bound: port + kubernetes.config.port_offset },
          'kubernetes: cannot bind a Gateway listener port',
        );
      }
    }
  }

  /** Bound addresses of the Gateway listener sockets, by declared port (tests, /api/status). */
  async gatewayPorts(): Promise<Map<number, AddressInfo>> {
    const out = new Map<number, AddressInfo>();
    for (const [port, listener] of this.#portListeners) out.set(port, (await listener).address);
    return out;
  }

  /**
   * Converges on what etcd holds: every change under the prefix (and every
   * reconnect of the watch, which may have missed some) schedules one reload.
   * A rejected document keeps the running configuration; the next change
   * tries again.
   */
  #watchEtcd(etcd: EtcdConfigSource): { close(): void } {
    let timer: NodeJS.Timeout | undefined;
    let failing = false;
    const schedule = () => {
      if (timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        this.reloadFromEtcd('etcd').catch((err: unknown) => {
          if (!(err instanceof ConfigRejected))
            this.logger.warn({ err, prefix: etcd.prefix }, 'cannot reload the configuration from etcd');
        });
      }, 100);
    };
    const watch = etcd.watch({
      onEvents: schedule,
      onConnected: () => {
        if (failing) this.logger.info({ prefix: etcd.prefix }, 'etcd watch re-established');
        failing = false;
        schedule();
      },
      onError: (err) => {
        if (!failing) this.logger.warn({ err, prefix: etcd.prefix }, 'etcd watch lost; retrying');
        failing = true;
      },
    });
    return {
      close: () => {
        clearTimeout(timer);
        watch.close();
      },
    };
  }

  private onFileChange(): void {
    if (this.gatewayPath === undefined) return;
    // A large file is read (asynchronously) and compared inside reloadFromFile: a synchronous read
    // here would stall requests in flight.
    let size: number;
    try {
      size = statSync(this.gatewayPath).size;
    } catch {
      return;
    }
    if (size < OFF_THREAD_PARSE_BYTES) {
      let file: GatewayFileBytes;
      try {
        file = readGatewayFile(this.gatewayPath);
      } catch {
        return;
      }
      if (this.#lastAppliedFile?.equals(file) === true) {
        this.#noteFileFixed(true);
        return;
      }
    }
    this.reloadFromFile('file', true).catch(() => undefined);
  }

  /** After a rejected file, one INFO line says the file is good again (operators otherwise see only the WARN). */
  #noteFileFixed(unchanged: boolean): void {
    if (!this.#fileBroken) return;
    this.#fileBroken = false;
    this.logger.info(
      { path: this.gatewayPath },
      unchanged
        ? 'configuration file fixed: it matches the running configuration again'
        : 'configuration file fixed: the previous rejection is resolved',
    );
  }

  /** Our own writes (Admin persist) must not trigger a reload of the same content. */
  noteWrittenFile(bytes: GatewayFileBytes): void {
    this.#lastAppliedFile = bytes;
  }

  /**
   * Graceful shutdown: stop accepting, let in-flight requests finish within
   * `shutdown_timeout_seconds`, then cut what is left.
   */
  async shutdown(): Promise<void> {
    this.#watcher?.close();
    this.#etcdWatch?.close();
    this.#kubernetes?.stop();
    for (const listener of this.#portListeners.values())
      await listener
        .then((l) => l.close(this.system.timeouts.shutdown_timeout_seconds * 1000))
        .catch(() => undefined);
    await this.acme?.stop();
    await this.#listener?.close(this.system.timeouts.shutdown_timeout_seconds * 1000);
    await this.#observer?.close();
    await this.#slot.runtime.close();
  }
}

export { compileWith, compileWithAsync };

export type { ConfigIssue };

/** The engine's span hooks, only when tracing is on (no key at all otherwise). */
function spansOf(telemetry: GatewayTelemetry | undefined): { spans?: NodeSpans } {
  return telemetry?.spans === undefined ? {} : { spans: telemetry.spans };
}

function withTelemetry(finished: RequestFinished, telemetry: GatewayTelemetry | undefined): RequestFinished {
  return telemetry === undefined ? finished : telemetry.finished(finished);
}

/** Per-node run counters of a runtime, for the metrics scrape. */
function* nodeSamples(runtime: Runtime): Iterable<NodeSample> {
  for (const policy of runtime.policies.values()) {
    for (const node of policy.nodes.values()) {
      yield {
        policy: policy.name,
        nodeId: node.id,
        type: node.type,
        runs: node.stats.runs,
        ms: node.stats.ms,
        buckets: node.stats.buckets,
      };
    }
  }
}
