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
import { emitAccessRecord, PinoLogBridge } from './log-bridge.js';
import { PrometheusProducer } from './metrics-bridge.js';
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

/** The running SDK: tracer, meter and logger providers over OTLP exporters (docs/opentelemetry.md). */
export class Telemetry implements GatewayTelemetry {
  readonly spans: RequestTracing | undefined;
  /** pino's second stream (src/core/logger.ts): every gateway record, as a JSON line. */
  readonly logSink: { write(line: string): void } | undefined;
  readonly #tracerProvider: TracerProvider | undefined;
  readonly #meterProvider: MeterProvider | undefined;
  readonly #loggerProvider: LoggerProvider | undefined;
  readonly #system: SystemConfig;
  #registry: Registry | undefined;
  #logger: Logger | undefined;

  constructor(config: OtlpConfig, system: SystemConfig, env: NodeJS.ProcessEnv = process.env) {
    this.#system = system;
    const resource = defaultResource()
      .merge(resourceFromAttributes({ 'service.name': 'switchyard' }))
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes(config.resource));
    if (config.traces.enabled) {
      const ratio = config.traces.sample_ratio;
      this.#tracerProvider = new TracerProvider({
        resource,
        sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
        spanProcessors: [new BatchSpanProcessor({ exporter: traceExporter(config, env) })],
      });
      this.spans = new RequestTracing(this.#tracerProvider.getTracer(SCOPE));
    }
    if (config.metrics.enabled) {
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
        metricProducers: [new PrometheusProducer(() => this.#registry)],
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

  /** Exports this registry's series (the `/metrics` ones) from now on. */
  exportMetrics(registry: Registry): void {
    this.#registry = registry;
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
): Telemetry | undefined {
  const config = system.telemetry?.otlp;
  if (config === undefined || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  return new Telemetry(config, system, env);
}
