import { Metadata } from '@grpc/grpc-js';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as HttpLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as HttpMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as HttpTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { OtlpConfig, OtlpProtocol } from '../config/telemetry.js';

export type Signal = 'traces' | 'metrics' | 'logs';

const PROTOCOLS: readonly string[] = ['http/protobuf', 'grpc'];

/** `protocol`, else the SDK's variables (signal first), else http/protobuf. */
export function protocolOf(config: OtlpConfig, signal: Signal, env: NodeJS.ProcessEnv): OtlpProtocol {
  if (config.protocol !== undefined) return config.protocol;
  const name = `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_PROTOCOL`;
  const [key, value] =
    env[name] !== undefined && env[name] !== ''
      ? [name, env[name]]
      : ['OTEL_EXPORTER_OTLP_PROTOCOL', env.OTEL_EXPORTER_OTLP_PROTOCOL];
  if (value === undefined || value.trim() === '') return 'http/protobuf';
  const protocol = value.trim();
  if (!PROTOCOLS.includes(protocol))
    throw new Error(`${key}: '${protocol}' is not supported here; use http/protobuf or grpc`);
  return protocol as OtlpProtocol;
}

/** `<endpoint>/v1/<signal>`, keeping a path prefix the endpoint has (a collector behind a proxy). */
function httpUrl(endpoint: string, signal: Signal): string {
  return new URL(`v1/${signal}`, endpoint.endsWith('/') ? endpoint : `${endpoint}/`).href;
}

interface Common {
  url?: string;
  timeoutMillis?: number;
}

/**
 * What the exporters get from system.yaml; what it leaves unset they read from the SDK's
 * `OTEL_EXPORTER_OTLP_*` variables themselves (endpoint, headers, timeout, certificates).
 */
function common(config: OtlpConfig, signal: Signal, protocol: OtlpProtocol): Common {
  const out: Common = {};
  if (config.endpoint !== undefined)
    out.url = protocol === 'grpc' ? config.endpoint : httpUrl(config.endpoint, signal);
  if (config.timeout_s !== undefined) out.timeoutMillis = Math.round(config.timeout_s * 1000);
  return out;
}

function metadataOf(headers: Record<string, string>): Metadata {
  const metadata = new Metadata();
  for (const [name, value] of Object.entries(headers)) metadata.set(name.toLowerCase(), value);
  return metadata;
}

export function traceExporter(config: OtlpConfig, env: NodeJS.ProcessEnv): SpanExporter {
  const protocol = protocolOf(config, 'traces', env);
  const base = common(config, 'traces', protocol);
  return protocol === 'grpc'
    ? new GrpcTraceExporter({ ...base, metadata: metadataOf(config.headers) })
    : new HttpTraceExporter({ ...base, headers: { ...config.headers } });
}

export function metricExporter(config: OtlpConfig, env: NodeJS.ProcessEnv): PushMetricExporter {
  const protocol = protocolOf(config, 'metrics', env);
  const base = common(config, 'metrics', protocol);
  return protocol === 'grpc'
    ? new GrpcMetricExporter({ ...base, metadata: metadataOf(config.headers) })
    : new HttpMetricExporter({ ...base, headers: { ...config.headers } });
}

export function logExporter(config: OtlpConfig, env: NodeJS.ProcessEnv): LogRecordExporter {
  const protocol = protocolOf(config, 'logs', env);
  const base = common(config, 'logs', protocol);
  return protocol === 'grpc'
    ? new GrpcLogExporter({ ...base, metadata: metadataOf(config.headers) })
    : new HttpLogExporter({ ...base, headers: { ...config.headers } });
}
