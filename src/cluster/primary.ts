import cluster, { type Worker } from 'node:cluster';
import { deserialize } from 'node:v8';
import type { Trace } from '../debug/trace-types.js';
import { setTimeout as delay } from 'node:timers/promises';
import type { GatewayConfig } from '../config/gateway.js';
import type { StreamListenerConfig } from '../config/system.js';
import type { ApplySource, Gateway } from '../gateway.js';
import type { Logger } from '../core/logger.js';
import { ClusterMetrics } from './metrics.js';
import type { ToPrimary, ToWorker, WorkerMetrics } from './protocol.js';
import { SharedService } from './shared-service.js';
import { sendInPieces } from '../config/document-pieces.js';
import { shadowRecords } from '../plugins/traffic/shadow-compare.js';
import { secretsOf } from '../config/secrets/binding.js';
import { secretValuesFor, type SecretValues } from '../config/secrets/relayed.js';

export interface ClusterPrimaryOptions {
  /** The control-plane gateway: compiles and validates, serves the Admin API, holds the counters. */
  gateway: Gateway;
  /** Worker processes to keep running (resolved `workers`). */
  workers: number;
  logger: Logger;
  /** Longest wait for a worker to start or to apply one configuration before it is replaced. */
  applyTimeoutMs?: number;
}

/** Restart backoff: 100 ms doubling to 10 s; a worker that ran 30 s resets it. */
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 10_000;
const BACKOFF_RESET_MS = 30_000;
const SCRAPE_TIMEOUT_MS = 5_000;
const TIMEOUT = Symbol('timeout');

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** Resolves with `TIMEOUT` once `deadline` (epoch ms) passes first. */
function until<T>(promise: Promise<T>, deadline: number): Promise<T | typeof TIMEOUT> {
  const wait = Math.max(0, deadline - Date.now());
  return Promise.race([promise, delay(wait, TIMEOUT, { ref: false })]);
}

/** One worker process: its configuration version and the answers it owes. */
class WorkerHandle {
  readonly startedAt = Date.now();
  readonly ready = deferred<void>();
  readonly exited = deferred<void>();
  /** Its listeners are closed after `stop` (or it exited). */
  readonly draining = deferred<void>();
  readonly applies = new Map<number, Deferred<string | undefined>>();
  readonly scrapes = new Map<number, Deferred<WorkerMetrics>>();
  readonly acks = new Map<number, Deferred<void>>();
  readonly returns = new Map<number, Deferred<number>>();
  /** The configuration version it serves. */
  version = 0;
  serving = false;
  gone = false;

  constructor(
    readonly worker: Worker,
    /** 1-based slot number, stable across restarts (the `worker` metrics label). */
    readonly index: number,
  ) {}

  send(message: ToWorker): void {
    if (this.gone || !this.worker.isConnected()) return;
    try {
      this.worker.send(message);
    } catch {
      // The channel closed under us; the exit handler deals with the worker.
    }
  }
}

interface Slot {
  readonly index: number;
  handle: WorkerHandle | undefined;
  /** Restarts in a row, for the backoff. */
  failures: number;
  timer: NodeJS.Timeout | undefined;
  /** Resolved (and replaced) whenever the slot gets a new worker. */
  changed: Deferred<void>;
}

/**
 * The primary of `workers: N`: the control plane. It forks the workers (which
 * share the data-plane and stream listeners through node:cluster), sends them
 * the validated configuration and waits until each runs it, answers their
 * gateway-wide counter calls, collects their traces and metrics, replaces a
 * worker that dies (with backoff) or cannot apply a configuration, and drains
 * them all on shutdown. See docs/workers.md.
 */
export class ClusterPrimary {
  readonly #gateway: Gateway;
  readonly #logger: Logger;
  readonly #slots: Slot[];
  readonly #service: SharedService;
  readonly #applyTimeoutMs: number;
  /** Every worker process not yet exited, by cluster id (a draining one is no longer in its slot). */
  readonly #handles = new Map<number, WorkerHandle>();
  /** The latest figures of every worker process, and what the ended ones counted. */
  readonly #metrics = new ClusterMetrics();
  #config: GatewayConfig;
  /** The `${secret:…}` values of `#config` as the control plane compiled it; the workers get them with it. */
  #secrets: SecretValues | undefined;
  /** `stream:` as last reloaded by SIGHUP; undefined: as the process started. */
  #stream: StreamListenerConfig[] | undefined;
  #version = 1;
  #restarts = 0;
  #scrapes = 0;
  #messages = 0;
  #started = false;
  #stopping = false;
  #rolling: Promise<void> = Promise.resolve();

  constructor(options: ClusterPrimaryOptions) {
    this.#gateway = options.gateway;
    this.#logger = options.logger;
    this.#applyTimeoutMs = options.applyTimeoutMs ?? 60_000;
    this.#service = new SharedService(options.gateway.scope, options.workers, (id, key) =>
      this.#reclaimLease(id, key),
    );
    this.#config = options.gateway.runtime.config;
    this.#secrets = secretValuesFor(this.#config, secretsOf(process.env));
    this.#slots = Array.from({ length: options.workers }, (_, i) => ({
      index: i + 1,
      handle: undefined,
      failures: 0,
      timer: undefined,
      changed: deferred<void>(),
    }));
    // JSON costs about half of `advanced` per small message (docs/workers.md); bytes travel as base64.
    cluster.setupPrimary({ serialization: 'json' });
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** Forks every worker and resolves once all listen; rejects when one cannot start. */
  async start(): Promise<void> {
    for (const slot of this.#slots) this.#fork(slot);
    const deadline = Date.now() + this.#applyTimeoutMs;
    for (const slot of this.#slots) {
      const handle = slot.handle as WorkerHandle;
      const result = await until(handle.ready.promise, deadline).catch((err: Error) => err);
      if (result === TIMEOUT) throw new Error(`worker ${slot.index} did not start in time`);
      if (result instanceof Error) throw new Error(`worker ${slot.index} could not start: ${result.message}`);
    }
    this.#started = true;
    this.#gateway.renderMetrics = () => this.renderMetrics();
    const acme = this.#gateway.acme;
    // The validator connects to whichever worker the kernel picks: every worker serves the answer.
    if (acme !== undefined) acme.challengeRelay = (domain, pair) => this.#relayChallenge(domain, pair);
    // Workers load certificates from ACME storage when they start; a new one reaches them by a rolling restart.
    acme?.onChange(() => {
      this.#rolling = this.#rolling.then(() => this.#restartAll('ACME certificate changed'));
    });
  }

  /** Asks the worker (cluster id) to give back its unused admissions of window `key`: 0 if it is gone or slow. */
  async #reclaimLease(workerId: number, key: string): Promise<number> {
    const handle = this.#slots.find((s) => s.handle?.worker.id === workerId)?.handle;
    if (handle === undefined || handle.gone) return 0;
    const id = ++this.#messages;
    const given = deferred<number>();
    handle.returns.set(id, given);
    handle.send({ t: 'reclaim', id, key });
    const n = await until(given.promise, Date.now() + SCRAPE_TIMEOUT_MS);
    handle.returns.delete(id);
    return n === TIMEOUT ? 0 : n;
  }

  /** Sends a TLS-ALPN-01 answer to every serving worker; resolves once each has it (or a 10 s bound). */
  async #relayChallenge(domain: string, pair: { key: string; cert: string } | undefined): Promise<void> {
    const deadline = Date.now() + 10_000;
    const live = this.#slots.flatMap((s) => (s.handle?.serving === true ? [s.handle] : []));
    await Promise.all(
      live.map(async (handle) => {
        const id = ++this.#messages;
        const ack = deferred<void>();
        handle.acks.set(id, ack);
        handle.send({ t: 'challenge', id, domain, ...(pair === undefined ? {} : { pair }) });
        await until(ack.promise, deadline);
        handle.acks.delete(id);
      }),
    );
  }

  /** Replaces the workers one at a time, each once its successor listens, so capacity never drops. */
  async #restartAll(reason: string): Promise<void> {
    this.#logger.info({ reason }, 'restarting workers one at a time');
    for (const slot of this.#slots) {
      if (this.#stopping) return;
      // The successor listens before the old worker stops accepting, so capacity never drops.
      const old = slot.handle;
      this.#restarts++;
      const handle = this.#fork(slot);
      const deadline = Date.now() + this.#applyTimeoutMs;
      await until(handle.ready.promise, deadline).catch(() => undefined);
      if (old === undefined) continue;
      void this.#retire(old, this.#gateway.system.timeouts.shutdown_timeout_seconds * 1000);
      await until(old.draining.promise, deadline);
    }
  }

  /**
   * Gateway `onApplied`: every worker runs `config` before this resolves (so an
   * Admin write is acknowledged only then). A worker that rejects it, or does
   * not answer in time, is replaced by one started with it.
   */
  async broadcast(config: GatewayConfig, source: ApplySource): Promise<void> {
    this.#config = config;
    this.#secrets = secretValuesFor(config, secretsOf(process.env));
    this.#version++;
    const deadline = Date.now() + this.#applyTimeoutMs;
    await Promise.all(this.#slots.map((slot) => this.#sync(slot, source, deadline)));
  }

  async #sync(slot: Slot, source: ApplySource, deadline: number): Promise<void> {
    while (!this.#stopping) {
      const handle = slot.handle;
      if (handle === undefined) {
        if ((await until(slot.changed.promise, deadline)) === TIMEOUT) return this.#late(slot);
        continue;
      }
      const ready = await until(handle.ready.promise, deadline).catch(() => undefined);
      if (handle.gone) continue;
      if (ready === TIMEOUT) return this.#late(slot);
      if (handle.version >= this.#version) return;
      const version = this.#version;
      const answer = deferred<string | undefined>();
      handle.applies.set(version, answer);
      await this.#sendConfig(handle, version, this.#config, source);
      const error = await until(answer.promise, deadline).catch(() => undefined);
      handle.applies.delete(version);
      if (handle.gone) continue;
      if (error === undefined) {
        handle.version = Math.max(handle.version, version);
        continue;
      }
      this.#logger.error(
        {
          worker: slot.index,
          pid: handle.worker.process.pid,
          error: error === TIMEOUT ? 'timed out' : error,
        },
        'worker cannot apply the configuration; replacing it',
      );
      this.#replace(slot);
      // The old worker still runs the previous document: acknowledge once it takes no new connection.
      await until(handle.draining.promise, deadline);
    }
  }

  /**
   * Sends configuration `version` in pieces, one per turn (a worker reads each in well under a
   * millisecond; the whole of a 10,000-route document stalled its requests ~200 ms), then the
   * message to apply it. src/cluster/config-pieces.ts assembles them.
   */
  async #sendConfig(
    handle: WorkerHandle,
    version: number,
    config: GatewayConfig,
    source: ApplySource,
  ): Promise<void> {
    const sent = await sendInPieces(config, (piece) => {
      if (handle.gone) return false;
      handle.send({ t: 'config-piece', v: version, piece });
      return true;
    });
    const secrets = this.#secrets;
    if (sent) handle.send({ t: 'config', v: version, source, ...(secrets === undefined ? {} : { secrets }) });
  }

  #late(slot: Slot): void {
    this.#logger.error({ worker: slot.index }, 'worker did not take the configuration in time');
  }

  #fork(slot: Slot): WorkerHandle {
    const worker = cluster.fork({ SWITCHYARD_WORKER: String(slot.index) });
    const handle = new WorkerHandle(worker, slot.index);
    slot.handle = handle;
    this.#handles.set(worker.id, handle);
    this.#metrics.track(worker.id, slot.index, worker.process.pid ?? 0);
    const changed = slot.changed;
    slot.changed = deferred<void>();
    changed.resolve();
    worker.on('message', (message: ToPrimary) => this.#onMessage(handle, message));
    worker.on('exit', (code, signal) => this.#onExit(slot, handle, code, signal));
    // Every message it sent (its final metrics snapshot too) has arrived.
    worker.on('disconnect', () => this.#metrics.closed(worker.id));
    worker.on('error', (err) => this.#logger.warn({ err, worker: slot.index }, 'worker channel error'));
    return handle;
  }

  /** Starts a fresh worker in the slot now and drains the old one. */
  #replace(slot: Slot): void {
    const old = slot.handle;
    this.#restarts++;
    this.#fork(slot);
    if (old !== undefined)
      void this.#retire(old, this.#gateway.system.timeouts.shutdown_timeout_seconds * 1000);
  }

  /** Asks a worker to drain and exit; kills it if it has not within `graceMs` (plus a margin). */
  #retire(handle: WorkerHandle, graceMs: number): Promise<void> {
    handle.send({ t: 'stop' });
    const timer = setTimeout(() => handle.worker.process.kill('SIGKILL'), graceMs + 2000);
    timer.unref();
    return handle.exited.promise.finally(() => clearTimeout(timer));
  }

  #onMessage(handle: WorkerHandle, message: ToPrimary): void {
    switch (message.t) {
      case 'hello': {
        handle.version = this.#version;
        // Without `secrets:`: the values come resolved (below); the managers' credentials stay here.
        const { secrets: _managers, ...system } = this.#gateway.system;
        handle.send({
          t: 'init',
          worker: handle.index,
          v: this.#version,
          system: { ...system, stream: this.#stream ?? system.stream },
          config: this.#config,
          gatewayPath: this.#gateway.gatewayPath,
          ...(this.#secrets === undefined ? {} : { secrets: this.#secrets }),
        });
        return;
      }
      case 'ready':
        handle.serving = true;
        handle.ready.resolve();
        return;
      case 'draining':
        handle.draining.resolve();
        return;
      case 'applied':
        handle.applies.get(message.v)?.resolve(message.error);
        return;
      case 'calls': {
        const replies = this.#service.run(handle.worker.id, message.c);
        if (Array.isArray(replies)) {
          if (replies.length > 0) handle.send({ t: 'replies', r: replies });
        } else
          void replies.then(
            (r) => handle.send({ t: 'replies', r }),
            (err: unknown) => this.#logger.warn({ err }, 'a shared counter call failed'),
          );
        return;
      }
      case 'trace': {
        const store = this.#gateway.debug.store;
        const trace = deserialize(Buffer.from(message.v8, 'base64')) as Trace;
        store.add({ ...trace, seq: store.nextSeq() });
        return;
      }
      case 'shadow':
        shadowRecords(this.#gateway.scope).keep(message.p, message.n, message.m);
        return;
      case 'metrics':
        this.#metrics.update(handle.worker.id, message.m);
        handle.scrapes.get(message.id)?.resolve(message.m);
        return;
      case 'ack':
        handle.acks.get(message.id)?.resolve();
        return;
      case 'returned':
        handle.returns.get(message.id)?.resolve(message.n);
        return;
    }
  }

  #onExit(slot: Slot, handle: WorkerHandle, code: number | null, signal: string | null): void {
    handle.gone = true;
    handle.serving = false;
    const gone = new Error(`worker ${handle.index} exited (${signal ?? `code ${String(code)}`})`);
    handle.ready.reject(gone);
    for (const answer of handle.applies.values()) answer.reject(gone);
    for (const scrape of handle.scrapes.values()) scrape.reject(gone);
    for (const ack of handle.acks.values()) ack.resolve();
    for (const given of handle.returns.values()) given.resolve(0);
    handle.exited.resolve();
    handle.draining.resolve();
    this.#service.workerGone(handle.worker.id);
    this.#handles.delete(handle.worker.id);
    this.#metrics.exited(handle.worker.id, !handle.worker.isConnected());
    if (slot.handle !== handle) return;
    slot.handle = undefined;
    if (this.#stopping || !this.#started) return;
    if (Date.now() - handle.startedAt > BACKOFF_RESET_MS) slot.failures = 0;
    const wait = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** slot.failures);
    slot.failures++;
    this.#restarts++;
    this.#logger.warn(
      { worker: slot.index, pid: handle.worker.process.pid, code, signal, restart_in_ms: wait },
      'worker exited; restarting it',
    );
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (!this.#stopping) this.#fork(slot);
    }, wait);
  }

  /**
   * `/metrics`: the primary's registry and every worker process's, aggregated (src/cluster/metrics.ts).
   * Every serving process is asked, a draining one too; one that does not answer in time counts with
   * its previous snapshot.
   */
  async renderMetrics(): Promise<{ contentType: string; body: string }> {
    const deadline = Date.now() + SCRAPE_TIMEOUT_MS;
    const live = [...this.#handles.values()].filter((h) => h.serving && !h.gone);
    await Promise.all(live.map((handle) => this.#scrape(handle, deadline)));
    return this.#metrics.render(await this.#gateway.metrics.registry.getMetricsAsJSON(), {
      serving: this.#slots.filter((s) => s.handle?.serving === true).length,
      configured: this.#slots.length,
      restarts: this.#restarts,
    });
  }

  /** Asks one worker for its registry; the answer lands in #metrics (see #onMessage). */
  async #scrape(handle: WorkerHandle, deadline: number): Promise<void> {
    const id = ++this.#scrapes;
    const answer = deferred<WorkerMetrics>();
    handle.scrapes.set(id, answer);
    handle.send({ t: 'metrics?', id });
    await until(answer.promise, deadline).catch(() => undefined);
    handle.scrapes.delete(id);
  }

  /** Every worker, and every worker started later, runs these stream listeners (SIGHUP reload). */
  applyStream(stream: StreamListenerConfig[]): void {
    this.#stream = stream;
    for (const slot of this.#slots) {
      const handle = slot.handle;
      if (handle !== undefined && !handle.gone) handle.send({ t: 'stream', stream });
    }
  }

  /** Passes a signal on to every live worker (SIGUSR1: each reopens its access-log file). */
  signalWorkers(signal: NodeJS.Signals): void {
    for (const slot of this.#slots) {
      const handle = slot.handle;
      if (handle !== undefined && !handle.gone) handle.worker.process.kill(signal);
    }
  }

  /** SIGTERM: every worker drains within `graceMs` (then is killed); no worker is restarted. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    const handles: WorkerHandle[] = [];
    for (const slot of this.#slots) {
      clearTimeout(slot.timer);
      if (slot.handle !== undefined) handles.push(slot.handle);
    }
    await Promise.all(handles.map((h) => this.#retire(h, graceMs)));
  }
}
