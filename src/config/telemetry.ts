/** JSON Schema and checks of system.yaml `telemetry:` (docs/opentelemetry.md). */
import type { ConfigIssue } from './schema-validate.js';

export type OtlpProtocol = 'http/protobuf' | 'grpc';

/** `telemetry.otlp` after the schema applied its defaults. */
export interface OtlpConfig {
  /** Base URL; unset = the SDK's `OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT`, else localhost:4318 / :4317. */
  endpoint?: string;
  /** Unset = `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf. */
  protocol?: OtlpProtocol;
  headers: Record<string, string>;
  /** Unset = `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s. */
  timeout_s?: number;
  metrics: { enabled: boolean; interval_s?: number };
  logs: { enabled: boolean };
  traces: { enabled: boolean; sample_ratio: number };
  resource: Record<string, string | number | boolean>;
}

export interface TelemetryConfig {
  otlp?: OtlpConfig;
}

const onOff = (description: string) => ({ type: 'boolean', default: true, description }) as const;

export const telemetrySchema = {
  type: 'object',
  additionalProperties: false,
  description: 'OpenTelemetry export of metrics, logs and traces (docs/opentelemetry.md).',
  properties: {
    otlp: {
      type: 'object',
      additionalProperties: false,
      properties: {
        endpoint: {
          type: 'string',
          minLength: 1,
          description:
            'Collector base URL (http:// or https://): HTTP posts to /v1/traces|metrics|logs, gRPC dials its authority (h2c for http://). Unset: OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4318 (HTTP) or :4317 (gRPC).',
        },
        protocol: {
          type: 'string',
          enum: ['http/protobuf', 'grpc'],
          description: 'Unset: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.',
        },
        headers: {
          type: 'object',
          default: {},
          additionalProperties: { type: 'string' },
          description:
            'Sent with every export (HTTP headers, gRPC metadata); values are secrets, never logged.',
        },
        timeout_s: {
          type: 'number',
          exclusiveMinimum: 0,
          description: 'Seconds one export may take; unset: OTEL_EXPORTER_OTLP_TIMEOUT, else 10.',
        },
        metrics: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: onOff('Export the /metrics series.'),
            interval_s: {
              type: 'number',
              minimum: 1,
              description: 'Seconds between exports; unset: OTEL_METRIC_EXPORT_INTERVAL (ms), else 60.',
            },
          },
        },
        logs: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: { enabled: onOff("Export the gateway's log records and, when on, the access log.") },
        },
        traces: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: onOff('A span per request, per node and per upstream call.'),
            sample_ratio: {
              type: 'number',
              minimum: 0,
              maximum: 1,
              default: 1,
              description:
                'Share of new traces recorded; a continued trace follows its caller’s sampled flag.',
            },
          },
        },
        resource: {
          type: 'object',
          default: {},
          propertyNames: { minLength: 1 },
          additionalProperties: { type: ['string', 'number', 'boolean'] },
          description:
            'Resource attributes, a flat map of dotted keys (service.name: edge); merged over OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.',
        },
      },
    },
  },
} as const;

/** What the schema cannot say: the endpoint is an http(s) URL, and a gRPC one names no path. */
export function telemetryIssues(telemetry: TelemetryConfig | undefined): ConfigIssue[] {
  const otlp = telemetry?.otlp;
  if (otlp?.endpoint === undefined) return [];
  const path = 'telemetry.otlp.endpoint';
  let url: URL;
  try {
    url = new URL(otlp.endpoint);
  } catch {
    return [{ path, message: `'${otlp.endpoint}' is not a URL; use http://host:port or https://host:port` }];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [{ path, message: `'${url.protocol}' is not supported; use http:// or https://` }];
  if (url.username !== '' || url.password !== '')
    return [{ path, message: 'must not carry credentials; put them in telemetry.otlp.headers' }];
  if (otlp.protocol === 'grpc' && url.pathname !== '/' && url.pathname !== '')
    return [{ path, message: `gRPC dials host:port only; remove the path '${url.pathname}'` }];
  return [];
}
