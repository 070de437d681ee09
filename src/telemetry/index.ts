import { randomUUID } from 'node:crypto';
import { diag, DiagLogLevel, type Span } from '@opentelemetry/api';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TracerProvider,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';
import type { Registry } from 'prom-client';
import type { SystemConfig } from '../config/system.js';
import type { OtlpConfig } from '../config/telemetry.js';
import type { Logger } from '../core/logger.js';
import { createRedaction } from '../debug/redaction.js';
import type { NodeSpans } from '../engine/run.js';
import { jsonFields } from '../observability/access-log-format.js';
import type { RequestFinished } from '../observability/metrics.js';
import { logExporter, metricExporter, traceExporter } from './exporters.js';
import { parseExposition } from './exposition.js';
import { emitAccessRecord, PinoLogBridge } from './log-bridge.js';
import { PrometheusProducer, type PromMetric } from './metrics-bridge.js';
import { RequestTracing } from './request-spans.js';

export { telemetrySchema, type OtlpConfig, type TelemetryConfig } from '../config/telemetry.js';

const SCOPE = 'switchyard';
const DEFAULT_INTERVAL_MS = 60_000;

/** What a gateway plugs in (GatewayOptions.telemetry); absent parts cost nothing. */
export interface GatewayTelemetry {
  /** The engine's per-node hooks, when traces are on. */
  readonly spans: NodeSpans | undefined;
  /** Wraps the data plane's completion call: closes the request span, emits the access record. */
  finished(inner: RequestFinished): RequestFinished;
}

/** Where this process runs in a `workers: N` gateway (docs/opentelemetry.md#workers). */
export interface TelemetryRole {
  /** The worker slot (1…N) of a data-plane worker; absent for the primary or a single process. */
  worker?: number;
}

/**
 * The resource every signal of this process carries. The gateway's `service.instance.id` is the
 * configured one (system.yaml `resource`, else `OTEL_RESOURCE_ATTRIBUTES`), else a random UUID
 * per start, written back into `config.resource` so the workers, which get this system.yaml from
 * the primary, derive theirs from it: `<id>-worker-<slot>`, with `switchyard.worker: <slot>`.
 */
function resourceOf(config: OtlpConfig, role: TelemetryRole) {
  let resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'switchyard' }))
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes(config.resource));
  const configured = resource.attributes['service.instance.id'];
  let instance = typeof configured === 'string' || typeof configured === 'number' ? String(configured) : '';
  if (instance === '') {
    instance = randomUUID();
    config.resource['service.instance.id'] = instance;
    resource = resource.merge(resourceFromAttributes({ 'service.instance.id': instance }));
  }
  const perProcess: Record<string, string | number> = { 'process.pid': process.pid };
  if (role.worker !== undefined) {
    perProcess['service.instance.id'] = `${instance}-worker-${role.worker}`;
    perProcess['switchyard.worker'] = role.worker;
  }
  return resource.merge(resourceFromAttributes(perProcess));
}

/** The running SDK: tracer, meter and logger providers over OTLP exporters (docs/opentelemetry.md). */
export class Telemetry implements GatewayTelemetry {
  readonly spans: RequestTracing | undefined;
  /** pino's second stream (src/core/logger.ts): every gateway record, as a JSON line. */
  readonly logSink: { write(line: string): void } | undefined;
  readonly #tracerProvider: TracerProvider | undefined;
  readonly #meterProvider: MeterProvider | undefined;
  readonly #loggerProvider: LoggerProvider | undefined;
  readonly #system: SystemConfig;
  #metricsSource: (() => Promise<readonly PromMetric[]>) | undefined;
  #logger: Logger | undefined;

  constructor(
    config: OtlpConfig,
    system: SystemConfig,
    env: NodeJS.ProcessEnv = process.env,
    role: TelemetryRole = {},
  ) {
    this.#system = system;
    const resource = resourceOf(config, role);
    if (config.traces.enabled) {
      const ratio = config.traces.sample_ratio;
      this.#tracerProvider = new TracerProvider({
        resource,
        sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
        spanProcessors: [new BatchSpanProcessor({ exporter: traceExporter(config, env) })],
      });
      this.spans = new RequestTracing(this.#tracerProvider.getTracer(SCOPE));
    }
    // A worker's series reach the export through the primary's aggregated /metrics: exported
    // once, summed as /metrics sums them, surviving worker restarts (docs/opentelemetry.md#workers).
    if (config.metrics.enabled && role.worker === undefined) {
      const fromEnv = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
      const interval =
        config.metrics.interval_s !== undefined
          ? config.metrics.interval_s * 1000
          : Number.isFinite(fromEnv) && fromEnv > 0
            ? fromEnv
            : DEFAULT_INTERVAL_MS;
      const reader = new PeriodicExportingMetricReader({
        exporter: metricExporter(config, env),
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(
          interval,
          config.timeout_s === undefined ? 30_000 : config.timeout_s * 1000,
        ),
        metricProducers: [new PrometheusProducer(() => this.#metricsSource?.())],
      });
      this.#meterProvider = new MeterProvider({ resource, readers: [reader] });
    }
    if (config.logs.enabled) {
      this.#loggerProvider = new LoggerProvider({
        resource,
        processors: [new BatchLogRecordProcessor({ exporter: logExporter(config, env) })],
      });
      const bridge = new PinoLogBridge(this.#loggerProvider.getLogger(SCOPE), () =>
        this.spans?.currentSpan(),
      );
      this.logSink = { write: bridge.write };
    }
    this.#installDiag(Object.values(config.headers));
  }

  /** The gateway's logger: SDK warnings (failed exports) go there, header values masked. */
  useLogger(logger: Logger): void {
    this.#logger = logger;
  }

  /**
   * Exports the `/metrics` series from now on: this registry's, or with `workers: N` what
   * `aggregated` renders (the primary's `/metrics`, every worker's series summed).
   */
  exportMetrics(registry: Registry, aggregated?: () => Promise<{ contentType: string; body: string }>): void {
    this.#metricsSource =
      aggregated === undefined
        ? () => registry.getMetricsAsJSON()
        : async () => parseExposition((await aggregated()).body);
  }

  finished(inner: RequestFinished): RequestFinished {
    const spans = this.spans;
    const logs = this.#loggerProvider?.getLogger(SCOPE);
    const access = this.#system.access_log;
    const accessToOtlp = logs !== undefined && access.output !== 'off';
    if (spans === undefined && !accessToOtlp) return inner;
    const redaction = createRedaction(this.#system.debug);
    const seen = new Map<string, boolean>();
    return (route, status, startedAt, nodeErrors, req, ctx) => {
      inner(route, status, startedAt, nodeErrors, req, ctx);
      let span: Span | undefined;
      if (ctx !== undefined && spans !== undefined) {
        span = spans.serverSpan(ctx);
        spans.finished(ctx, status);
      }
      if (accessToOtlp && req !== undefined) {
        const fields = jsonFields(
          { route, status, startedAt, req, ctx },
          redaction,
          access.request_id_header,
          seen,
        );
        emitAccessRecord(logs, fields, span);
      }
    };
  }

  /** Exports what is buffered, then stops the exporters. */
  async shutdown(): Promise<void> {
    await Promise.allSettled([
      this.#tracerProvider?.shutdown(),
      this.#meterProvider?.shutdown(),
      this.#loggerProvider?.shutdown(),
    ]);
  }

  /** SDK messages to the gateway log at warn and above; configured header values never appear in them. */
  #installDiag(secrets: string[]): void {
    const mask = (args: unknown[]): string => {
      let text = args
        .map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)))
        .join(' ');
      for (const secret of secrets) if (secret !== '') text = text.split(secret).join('<redacted>');
      return text;
    };
    const log =
      (level: 'warn' | 'error') =>
      (message: string, ...args: unknown[]) =>
        this.#logger?.[level]({ component: 'opentelemetry' }, mask([message, ...args]));
    const quiet = () => undefined;
    diag.setLogger(
      { error: log('error'), warn: log('warn'), info: quiet, debug: quiet, verbose: quiet },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
}

/** `OTEL_SDK_DISABLED=true` turns the export off whatever system.yaml says, as the SDK defines it. */
export function startTelemetry(
  system: SystemConfig,
  env: NodeJS.ProcessEnv = process.env,
  role: TelemetryRole = {},
): Telemetry | undefined {
  const config = system.telemetry?.otlp;
  if (config === undefined || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  return new Telemetry(config, system, env, role);
}
