import type { Context, HeaderMap, ResponsePart } from '../../../core/context.js';
import type { PluginEnv, Template } from '../../../core/plugin.js';
import { mentionsResponseBody } from '../../response-body-refs.js';

/** `log_format`: output field name → legacy `$var` / `{{…}}` template, or a constant scalar. */
export type LogFormat = Record<string, string | number | boolean>;

/** The ENTRY keys shared by the sixteen loggers that take `log_format`. */
export interface EntryConfig {
  log_format?: LogFormat;
  include_req_body?: boolean;
  include_resp_body?: boolean;
}

export type LogEntry = Record<string, unknown>;
export type EntryBuilder = (ctx: Context) => LogEntry;

/** An entry with the wall-clock time (epoch ms) of the request that made it. */
export interface Stamped {
  at: number;
  entry: LogEntry;
}

/** Builds stamped entries, for wire formats that carry their own timestamp. */
export function stamp(build: EntryBuilder): (ctx: Context) => Stamped {
  return (ctx) => ({ at: Date.now(), entry: build(ctx) });
}

export interface DefaultEntryOptions {
  headers: boolean;
  requestBody: boolean;
  responseBody: boolean;
}

/**
 * The default access-log entry: request, response, latency, client, route.
 * Header maps are copied, so nodes running after the logger cannot change
 * what is shipped later in the background.
 */
export function defaultEntry(ctx: Context, options: DefaultEntryOptions): LogEntry {
  const req = ctx.request;
  const res = ctx.response;
  const request: LogEntry = {
    method: req.method,
    uri: req.url,
    url: `${req.scheme}://${req.host}${req.url}`,
    host: req.host,
    scheme: req.scheme,
    protocol: req.protocol,
    size: req.body?.length ?? 0,
  };
  if (options.headers) request.headers = copyHeaders(req.headers);
  if (options.requestBody && req.body !== null) request.body = req.body.toString('utf8');
  const response: LogEntry = { status: res.status, size: responseSize(res) };
  if (options.headers) response.headers = copyHeaders(res.headers);
  if (options.responseBody && res.body !== null) response.body = res.body.toString('utf8');

  const entry: LogEntry = {
    start_time: Math.round(performance.timeOrigin + ctx.startedAt),
    latency: latencyMs(ctx),
    route: ctx.route,
    policy: ctx.policy,
    client_ip: req.remoteAddress,
    client_port: req.remotePort,
    request,
    response,
  };
  const consumer = ctx.consumer?.name ?? ctx.message['consumer.name'];
  if (typeof consumer === 'string' && consumer !== '') entry.consumer = consumer;
  if (ctx.errors.length > 0) {
    entry.errors = ctx.errors.map((e) => ({ node_id: e.node_id, code: e.code, message: e.message }));
  }
  return entry;
}

/**
 * The entry a logger ships: the rendered `log_format` map when configured
 * (values compiled once here, legacy `$var` included), else the default
 * entry with headers and the bodies the `include_*_body` keys ask for.
 */
export function entryBuilder(config: EntryConfig, env: PluginEnv): EntryBuilder {
  if (config.log_format === undefined) {
    const options: DefaultEntryOptions = {
      headers: true,
      requestBody: config.include_req_body === true,
      responseBody: config.include_resp_body === true,
    };
    return (ctx) => defaultEntry(ctx, options);
  }
  const fields: [string, Template | number | boolean][] = Object.entries(config.log_format).map(
    ([name, value]) => [
      name,
      typeof value === 'string' ? formatValue(value, `log_format.${name}`, env) : value,
    ],
  );
  return (ctx) => {
    const out: LogEntry = {};
    for (const [name, value] of fields) out[name] = typeof value === 'object' ? value.render(ctx) : value;
    return out;
  };
}

/**
 * The time variables only loggers know (docs/logging.md "log_format"), read
 * when the entry is built: `$time_iso8601` (UTC, milliseconds) and `$msec`
 * (Unix seconds with milliseconds), with or without braces.
 */
const TIME_VARS = /\$(?:\{(time_iso8601|msec)\}|(time_iso8601|msec)(?![A-Za-z0-9_]))/g;

const TIME_READERS: Record<string, () => string> = {
  time_iso8601: () => new Date().toISOString(),
  msec: () => (Date.now() / 1000).toFixed(3),
};

/** One `log_format` string: the template, with the logger time variables spliced in. */
function formatValue(value: string, key: string, env: PluginEnv): Template {
  const compile = (text: string): Template => env.template(text, key, { legacy: true, phase: 'response' });
  const parts: (Template | (() => string))[] = [];
  let last = 0;
  for (const match of value.matchAll(TIME_VARS)) {
    if (match.index > last) parts.push(compile(value.slice(last, match.index)));
    parts.push(TIME_READERS[match[1] ?? match[2] ?? '']!);
    last = match.index + match[0].length;
  }
  if (parts.length === 0) return compile(value);
  if (last < value.length) parts.push(compile(value.slice(last)));
  return {
    source: value,
    isStatic: false,
    render: (ctx) => {
      let out = '';
      for (const part of parts) out += typeof part === 'function' ? part() : part.render(ctx);
      return out;
    },
  };
}

/**
 * docs/configuration.md#streaming: a logger with `log_format` keeps the upstream streaming
 * unless a format value (or one of `extra` legacy fields) mentions the
 * response body; a logger without `log_format` always buffers.
 */
export function formatReadsBody(config: EntryConfig, ...extra: (string | undefined)[]): boolean {
  if (config.log_format === undefined) return true;
  const values = Object.values(config.log_format).filter((v): v is string => typeof v === 'string');
  return [...values, ...extra].some((text) => mentionsResponseBody(text, true));
}

/** Milliseconds since the context was built, to the microsecond. */
export function latencyMs(ctx: Context): number {
  return Math.round((performance.now() - ctx.startedAt) * 1000) / 1000;
}

/** A streamed body is still flowing: its announced length is all there is to log. */
function responseSize(res: ResponsePart): number {
  if (res.body !== null) return res.body.length;
  const announced = Number(res.header('content-length'));
  return Number.isFinite(announced) ? announced : 0;
}

function copyHeaders(headers: HeaderMap): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? [...value] : value;
  }
  return out;
}
