import { serialize } from 'node:v8';
import type { StreamListenerConfig } from '../config/system.js';
import { Gateway } from '../gateway.js';
import { createLogger, type Logger } from '../core/logger.js';
import { registerStreamMetrics } from '../stream/metrics.js';
import { closeAllPools } from '../outbound/pool-registry.js';
import { StreamListeners } from '../stream/index.js';
import { PrimaryChannel } from './primary-channel.js';
import { ConfigPieces } from './config-pieces.js';
import type { ToPrimary, ToWorker, WorkerMetrics } from './protocol.js';
import { WindowLeases, workerSharedState } from './worker-shared.js';
import { METRICS_PUSH_COST_FACTOR, METRICS_PUSH_MS } from './metrics.js';
import { shadowRecords } from '../plugins/traffic/shadow-compare.js';
import { bindSecrets } from '../config/secrets/binding.js';
import { RelayedSecrets } from '../config/secrets/relayed.js';

type Init = Extract<ToWorker, { t: 'init' }>;

/**
 * Test-only fault injection (docs/workers.md#testing-the-restart-path):
 * `SWITCHYARD_TEST_WORKER_REJECTS=<slot>:<text>` makes the worker in that slot
 * refuse a configuration change whose JSON contains `<text>`, as a worker
 * whose plugin cannot start there would. Only changes sent after startup are
 * checked, so the replacement (which gets the document at startup) runs it.
 * Unset, as in production, it does nothing.
 */
function injectedRefusal(worker: number, config: unknown): string | undefined {
  const hook = process.env.SWITCHYARD_TEST_WORKER_REJECTS;
  if (hook === undefined || hook === '') return undefined;
  const at = hook.indexOf(':');
  if (Number(hook.slice(0, at)) !== worker || !JSON.stringify(config).includes(hook.slice(at + 1)))
    return undefined;
  return `SWITCHYARD_TEST_WORKER_REJECTS: worker ${worker} refuses this configuration (test hook)`;
}

function send(message: ToPrimary): void {
  if (process.connected) process.send?.(message);
}

/** Sends `message` and resolves once it is written to the channel (before the process exits). */
function sendFlushed(message: ToPrimary): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || process.send === undefined) return resolve();
    try {
      process.send(message, undefined, undefined, () => resolve());
    } catch {
      resolve();
    }
  });
}

/**
 * A `workers` worker: compiles the configuration the primary sends, serves the
 * data-plane and stream listeners (shared through node:cluster), applies every
 * later configuration when told, and drains on `stop`, SIGTERM, or when the
 * primary goes away. It never reads gateway.yaml, watches, persists or talks
 * to etcd: the primary does (docs/workers.md). Returns the exit code.
 */
export async function runClusterWorker(): Promise<number> {
  const channel = new PrimaryChannel(send);
  const slot = Number(process.env.SWITCHYARD_WORKER);
  const leases = new WindowLeases();
  const pieces = new ConfigPieces();
  /** `${secret:…}` values come from the primary with each configuration (docs/secrets.md#workers). */
  const secrets = new RelayedSecrets();
  let gateway: Gateway | undefined;
  let streams: StreamListeners | undefined;
  /** Set once `init` arrives; a stream reload before that only logs nothing. */
  const log: { to?: Logger } = {};
  /** A `stream` message that came before the listeners were up: applied once they are. */
  let pendingStream: StreamListenerConfig[] | undefined;
  const applyStream = (running: StreamListeners, stream: StreamListenerConfig[]) =>
    void running.apply(stream).then((changes) => {
      const { started, updated, restarted, removed, failed } = changes;
      if (failed.length > 0) log.to?.error({ failed }, 'stream listeners reloaded with failures');
      else if (started.length + updated.length + restarted.length + removed.length > 0)
        log.to?.info({ started, updated, restarted, removed }, 'stream listeners reloaded');
    });
  /** The latest snapshot sent: when, what it cost (collect and send, ms), the requests it counts. */
  const sent = { at: Date.now(), ms: 0, answered: 0, pending: false };
  let collecting: Promise<unknown> = Promise.resolve();
  /**
   * Sends the registry to the primary as message `id` (0: unasked). One at a time, so the primary
   * receives them in the order their values were read (a newer one never arrives before an older
   * one: the summed counters stay monotonic).
   */
  const report = (id: number): Promise<void> => {
    const next = collecting.then(async () => {
      if (gateway === undefined) return;
      const started = performance.now();
      const answered = gateway.metrics.answered;
      const m: WorkerMetrics = await gateway.metrics.registry.getMetricsAsJSON();
      await sendFlushed({ t: 'metrics', id, m });
      Object.assign(sent, { at: Date.now(), ms: performance.now() - started, answered });
    });
    collecting = next.catch(() => undefined);
    return next;
  };
  let onStop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (onStop = resolve));
  const init = new Promise<Init>((resolve) => {
    process.on('message', (message: ToWorker) => {
      switch (message.t) {
        case 'init':
          pieces.started(message.v);
          return resolve(message);
        case 'config-piece':
          return pieces.add(message.v, message.piece);
        case 'replies':
          return channel.replies(message.r);
        case 'config': {
          if (gateway === undefined) return;
          const config = pieces.take(message.v, message.config);
          // Superseded by a newer configuration this worker runs already.
          if (config === undefined) return send({ t: 'applied', v: message.v });
          const refused = injectedRefusal(slot, config);
          if (refused !== undefined) return send({ t: 'applied', v: message.v, error: refused });
          if (message.secrets !== undefined) secrets.set(message.secrets);
          gateway.apply(config, message.source).then(
            () => send({ t: 'applied', v: message.v }),
            (err: unknown) => send({ t: 'applied', v: message.v, error: (err as Error).message }),
          );
          return;
        }
        case 'stream':
          if (streams === undefined) pendingStream = message.stream;
          else applyStream(streams, message.stream);
          return;
        case 'reclaim':
          return send({ t: 'returned', id: message.id, n: leases.reclaim(message.key) });
        case 'challenge':
          gateway?.acme?.setChallenge(message.domain, message.pair);
          return send({ t: 'ack', id: message.id });
        case 'metrics?':
          return void report(message.id).catch(() => undefined);
        case 'stop':
          return onStop();
      }
    });
  });
  process.on('disconnect', () => {
    channel.close(new Error('the primary process is gone'));
    onStop();
  });
  process.once('SIGTERM', () => onStop());
  process.once('SIGINT', () => onStop());
  // Reloads are the primary's; a SIGHUP sent to the whole process group must not kill a worker.
  process.on('SIGHUP', () => undefined);
  send({ t: 'hello' });

  const { system, config, gatewayPath, worker, secrets: values } = await init;
  if (values !== undefined) {
    secrets.set(values);
    bindSecrets(process.env, secrets);
  }
  // Its own spans and logs, under a resource naming the worker; the primary exports the metrics.
  const telemetry =
    system.telemetry?.otlp === undefined
      ? undefined
      : (await import('../telemetry/index.js')).startTelemetry(system, process.env, { worker });
  const logger = createLogger(system.logging, telemetry?.logSink).child({ worker });
  telemetry?.useLogger(logger);
  log.to = logger;
  // The worker's copy never persists, watches or orders certificates; the primary does.
  const workerSystem = { ...system, config: { ...system.config, persist: false, watch: false } };
  try {
    gateway = Gateway.create(
      {
        system: workerSystem,
        logger,
        wrapShared: workerSharedState(channel, leases),
        dataPlaneOnly: true,
        ...(gatewayPath === undefined ? {} : { gatewayPath }),
        ...(telemetry === undefined ? {} : { telemetry }),
      },
      config,
    );
    const debugStore = gateway.debug.store;
    debugStore.forward = (trace) => send({ t: 'trace', v8: serialize(trace).toString('base64') });
    shadowRecords(gateway.scope).forward = (p, n, m) => send({ t: 'shadow', p, n, m });
    await gateway.listen();
    const running = await StreamListeners.start(system, logger);
    streams = running;
    registerStreamMetrics(gateway.metrics.registry, () => running.list);
    if (pendingStream !== undefined) applyStream(running, pendingStream);
  } catch (err) {
    logger.error({ err }, 'worker cannot start');
    await telemetry?.shutdown();
    return 1;
  }
  send({ t: 'ready' });
  // What a worker killed with SIGKILL takes with it: the counts since its last snapshot, which is
  // at most METRICS_PUSH_MS old (or METRICS_PUSH_COST_FACTOR times what one costs, if longer) while
  // it answers requests. A scrape takes one too. An idle worker sends nothing.
  const metrics = gateway.metrics;
  const push = setInterval(() => {
    if (sent.pending || metrics.answered === sent.answered) return;
    if (Date.now() - sent.at < Math.max(METRICS_PUSH_MS, METRICS_PUSH_COST_FACTOR * sent.ms)) return;
    sent.pending = true;
    void report(0)
      .catch(() => undefined)
      .finally(() => (sent.pending = false));
  }, 1000);
  push.unref();
  await stopped;
  const graceMs = system.timeouts.shutdown_timeout_seconds * 1000;
  const drained = Promise.all([gateway.shutdown(), streams?.close(graceMs)]);
  // Both started by closing their listeners (node:cluster tells the primary on this same channel,
  // ahead of this message): a primary replacing this worker may now acknowledge a write.
  setImmediate(() => send({ t: 'draining' }));
  await drained;
  clearInterval(push);
  // Everything it counted reaches the primary, which keeps it in the summed counters.
  await report(0).catch(() => undefined);
  await closeAllPools();
  // What is still buffered (the drain's records too) is exported before the process ends.
  await telemetry?.shutdown();
  return 0;
}
