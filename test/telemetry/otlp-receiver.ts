/**
 * A local OTLP receiver for the telemetry tests: OTLP/HTTP (protobuf bodies on /v1/traces,
 * /v1/metrics, /v1/logs) and OTLP/gRPC (the three collector services, h2c), both decoding with the
 * official opentelemetry-proto definitions (./proto/, loaded with protobufjs and
 * @grpc/proto-loader). Every export is kept with the headers or metadata it came with.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));
const SERVICES = {
  traces: 'opentelemetry/proto/collector/trace/v1/trace_service.proto',
  metrics: 'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
  logs: 'opentelemetry/proto/collector/logs/v1/logs_service.proto',
} as const;
const PACKAGES = {
  traces: 'opentelemetry.proto.collector.trace.v1',
  metrics: 'opentelemetry.proto.collector.metrics.v1',
  logs: 'opentelemetry.proto.collector.logs.v1',
} as const;
const MESSAGES = {
  traces: ['ExportTraceServiceRequest', 'ExportTraceServiceResponse', 'TraceService'],
  metrics: ['ExportMetricsServiceRequest', 'ExportMetricsServiceResponse', 'MetricsService'],
  logs: ['ExportLogsServiceRequest', 'ExportLogsServiceResponse', 'LogsService'],
} as const;

export type Signal = keyof typeof SERVICES;
type Json = Record<string, unknown>;

export interface Export {
  signal: Signal;
  protocol: 'http/protobuf' | 'grpc';
  /** HTTP headers or gRPC metadata, lower-case names. */
  headers: Record<string, string>;
  body: Json;
}

/** A decoded span, attributes flattened to plain values, ids as hex. */
export interface SpanSeen {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

export interface LogSeen {
  traceId: string;
  spanId: string;
  body: unknown;
  severityText: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

export interface MetricSeen {
  name: string;
  kind: 'sum' | 'gauge' | 'histogram' | 'other';
  points: Json[];
}

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
root.loadSync(Object.values(SERVICES), { keepCase: false });

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: Number,
  defaults: false,
  arrays: true,
  includeDirs: [PROTO_DIR],
};

function hex(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return Buffer.from(value, 'base64').toString('hex');
  return Buffer.from(value as Uint8Array).toString('hex');
}

function anyValue(value: Json | undefined): unknown {
  if (value === undefined) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value)
    return ((value.arrayValue as Json).values as Json[] | undefined)?.map(anyValue) ?? [];
  return value;
}

export function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const entry of (list as { key: string; value?: Json }[] | undefined) ?? [])
    out[entry.key] = anyValue(entry.value);
  return out;
}

export class OtlpReceiver {
  readonly exports: Export[] = [];
  #http: Server | undefined;
  #grpc: grpc.Server | undefined;
  httpUrl = '';
  grpcUrl = '';

  async start(): Promise<this> {
    this.#http = createServer((req, res) => {
      const signal = (Object.keys(SERVICES) as Signal[]).find((s) => req.url === `/v1/${s}`);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (signal === undefined || req.method !== 'POST') {
          res.writeHead(404).end();
          return;
        }
        const [request, response] = MESSAGES[signal];
        const type = root.lookupType(`${PACKAGES[signal]}.${request}`);
        const decoded = type.toObject(type.decode(Buffer.concat(chunks)), {
          longs: String,
          enums: Number,
          arrays: true,
        });
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        this.exports.push({ signal, protocol: 'http/protobuf', headers, body: decoded });
        const answer = root.lookupType(`${PACKAGES[signal]}.${response}`);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(Buffer.from(answer.encode(answer.create({})).finish()));
      });
    });
    this.#http.listen(0, '127.0.0.1');
    await once(this.#http, 'listening');
    this.httpUrl = `http://127.0.0.1:${(this.#http.address() as AddressInfo).port}`;

    const server = new grpc.Server();
    for (const signal of Object.keys(SERVICES) as Signal[]) {
      const definition = protoLoader.loadSync(SERVICES[signal], LOADER_OPTIONS);
      const service = definition[`${PACKAGES[signal]}.${MESSAGES[signal][2]}`] as grpc.ServiceDefinition;
      server.addService(service, {
        Export: (call: grpc.ServerUnaryCall<Json, Json>, callback: grpc.sendUnaryData<Json>) => {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(call.metadata.getMap())) headers[k] = String(v);
          this.exports.push({ signal, protocol: 'grpc', headers, body: call.request });
          callback(null, {});
        },
      });
    }
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err === null ? resolve(p) : reject(err),
      ),
    );
    this.#grpc = server;
    this.grpcUrl = `http://127.0.0.1:${port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#http?.closeAllConnections();
    this.#http?.close();
    await new Promise<void>((resolve) =>
      this.#grpc === undefined ? resolve() : this.#grpc.tryShutdown(() => resolve()),
    );
  }

  of(signal: Signal): Export[] {
    return this.exports.filter((e) => e.signal === signal);
  }

  spans(): SpanSeen[] {
    return this.of('traces').flatMap((e) =>
      ((e.body.resourceSpans as Json[] | undefined) ?? []).flatMap((rs) => {
        const resource = attributes((rs.resource as Json | undefined)?.attributes);
        return ((rs.scopeSpans as Json[] | undefined) ?? []).flatMap((ss) =>
          ((ss.spans as Json[] | undefined) ?? []).map((s) => ({
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId),
            name: String(s.name),
            kind: Number(s.kind ?? 0),
            status: (s.status as SpanSeen['status'] | undefined) ?? {},
            attributes: attributes(s.attributes),
            resource,
          })),
        );
      }),
    );
  }

  logs(): LogSeen[] {
    return this.of('logs').flatMap((e) =>
      ((e.body.resourceLogs as Json[] | undefined) ?? []).flatMap((rl) => {
        const resource = attributes((rl.resource as Json | undefined)?.attributes);
        return ((rl.scopeLogs as Json[] | undefined) ?? []).flatMap((sl) =>
          ((sl.logRecords as Json[] | undefined) ?? []).map((r) => ({
            traceId: hex(r.traceId),
            spanId: hex(r.spanId),
            body: anyValue(r.body as Json | undefined),
            severityText: typeof r.severityText === 'string' ? r.severityText : '',
            attributes: attributes(r.attributes),
            resource,
          })),
        );
      }),
    );
  }

  /** The latest export's metrics by name (cumulative series: the last one has everything). */
  metrics(): Map<string, MetricSeen> {
    const out = new Map<string, MetricSeen>();
    for (const e of this.of('metrics'))
      for (const rm of (e.body.resourceMetrics as Json[] | undefined) ?? [])
        for (const sm of (rm.scopeMetrics as Json[] | undefined) ?? [])
          for (const m of (sm.metrics as Json[] | undefined) ?? []) {
            const kind =
              m.sum !== undefined
                ? 'sum'
                : m.gauge !== undefined
                  ? 'gauge'
                  : m.histogram !== undefined
                    ? 'histogram'
                    : 'other';
            const data = (m.sum ?? m.gauge ?? m.histogram ?? {}) as Json;
            const points = ((data.dataPoints as Json[] | undefined) ?? []).map((p) => ({
              ...p,
              attributes: attributes(p.attributes),
            }));
            out.set(String(m.name), { name: String(m.name), kind, points });
          }
    return out;
  }
}
