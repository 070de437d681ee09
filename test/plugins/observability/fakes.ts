/**
 * Collector doubles that speak the real ingestion formats: an HTTP collector
 * (answers like ES `_bulk`, an OAuth token endpoint, Loki…), a TCP and a UDP
 * collector, and a protobuf reader for the SLS/CLS log groups.
 */
import { once } from 'node:events';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startOrigin, type Origin } from '../../support/origins.js';
import { waitFor } from '../../support/wait.js';

/**
 * One HTTP collector for every HTTP logger. Each test uses its own path
 * prefix; `/fail/…` answers 500, `/refuse/…` answers 400.
 */
export async function startHttpCollector(): Promise<Origin> {
  return startOrigin((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    if (url.startsWith('/fail/')) return answer(res, 500, { error: 'down' });
    if (url.startsWith('/refuse/')) return answer(res, 400, { error: 'bad payload' });
    if (url.endsWith('/token')) return answer(res, 200, { access_token: 'tok-1', expires_in: 3600 });
    if (url.includes('/_bulk')) return answer(res, 200, { took: 1, errors: false, items: [] });
    if (url.includes('/loki/api/v1/push')) return answer(res, 204, null);
    if (url.includes('/api/v2/spans')) return answer(res, 202, null);
    return answer(res, 200, {});
  });
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  if (body === null) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export interface TcpCollector {
  readonly port: number;
  /** Bytes received so far, per connection, in arrival order. */
  readonly streams: Buffer[][];
  text(): string;
  waitForText(predicate: (text: string) => boolean): Promise<string>;
  close(): Promise<void>;
}

export async function startTcpCollector(): Promise<TcpCollector> {
  const streams: Buffer[][] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const chunks: Buffer[] = [];
    streams.push(chunks);
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end());
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const text = () => streams.map((chunks) => Buffer.concat(chunks).toString('utf8')).join('');
  return {
    port: (server.address() as { port: number }).port,
    streams,
    text,
    async waitForText(predicate) {
      await waitFor(() => predicate(text()), { what: 'tcp collector data', timeoutMs: 5000 });
      return text();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface UdpCollector {
  readonly port: number;
  readonly datagrams: Buffer[];
  waitFor(count: number): Promise<Buffer[]>;
  close(): Promise<void>;
}

export async function startUdpCollector(): Promise<UdpCollector> {
  const datagrams: Buffer[] = [];
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (msg) => datagrams.push(msg));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return {
    port: socket.address().port,
    datagrams,
    async waitFor(count) {
      await waitFor(() => datagrams.length >= count, { what: `${count} datagrams`, timeoutMs: 5000 });
      return datagrams;
    },
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/** A decoded protobuf message: field number → values (varints as numbers, the rest as bytes). */
export type ProtoFields = Map<number, (number | Buffer)[]>;

/** Reads varint (0) and length-delimited (2) fields, the only wire types the log groups use. */
export function decodeProto(buf: Buffer): ProtoFields {
  const fields: ProtoFields = new Map();
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    let scale = 1;
    for (;;) {
      const byte = buf[pos++];
      if (byte === undefined) throw new Error('truncated varint');
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 128;
    }
  };
  while (pos < buf.length) {
    const key = varint();
    const number = Math.floor(key / 8);
    const wire = key % 8;
    let value: number | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const length = varint();
      value = buf.subarray(pos, pos + length);
      pos += length;
    } else throw new Error(`unexpected wire type ${wire}`);
    const list = fields.get(number) ?? [];
    list.push(value);
    fields.set(number, list);
  }
  return fields;
}

/** The messages of a repeated embedded field. */
export function messages(fields: ProtoFields, number: number): ProtoFields[] {
  return (fields.get(number) ?? []).map((v) => decodeProto(v as Buffer));
}

export function text(fields: ProtoFields, number: number): string | undefined {
  const value = fields.get(number)?.[0];
  return Buffer.isBuffer(value) ? value.toString('utf8') : undefined;
}

export function int(fields: ProtoFields, number: number): number | undefined {
  const value = fields.get(number)?.[0];
  return typeof value === 'number' ? value : undefined;
}

/** `{key: value}` of a log's repeated Content{key = 1, value = 2} field. */
export function keyValues(log: ProtoFields, number: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const content of messages(log, number)) out[text(content, 1) ?? ''] = text(content, 2) ?? '';
  return out;
}

/** The default log entry, as the tests read it. */
export interface Entry {
  start_time: number;
  latency: number;
  route: string;
  policy: string;
  client_ip: string;
  client_port: number;
  consumer?: string;
  request: {
    method: string;
    uri: string;
    url: string;
    host: string;
    headers: Record<string, string>;
    size: number;
    body?: string;
  };
  response: { status: number; size: number; headers: Record<string, string>; body?: string };
  errors?: { node_id: string; code: string; message: string }[];
}

/** Parses a JSON document the test knows the shape of. */
export function parse<T>(text: string | Buffer): T {
  return JSON.parse(text.toString()) as T;
}

/** The wire documents of the exporters, as far as the tests read them. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: unknown }[];
  status: { code: number };
}

export interface OtlpExport {
  resourceSpans: { resource: { attributes: unknown }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  kind: string;
  timestamp: number;
  duration: number;
  localEndpoint: unknown;
  remoteEndpoint: unknown;
  tags: Record<string, string>;
}

export interface Segment {
  traceId: string;
  traceSegmentId: string;
  service: string;
  serviceInstance: string;
  spans: {
    spanType: string;
    spanLayer: string;
    spanId: number;
    parentSpanId: number;
    operationName: string;
    startTime: number;
    endTime: number;
    isError: boolean;
    refs?: unknown[];
  }[];
}

export interface LogData {
  service: string;
  serviceInstance: string;
  endpoint: string;
  body: { json: { json: string } };
  traceContext?: unknown;
}
