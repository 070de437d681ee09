import type { Context, HeaderMap } from '../core/context.js';

/** Reads one value from a request context; built at compile time, called per render. */
export type Reader = (ctx: Context) => string;

/** `request` fields run before any response exists, so `response.status` is fixed at 0 there. */
export type Phase = 'request' | 'response';

/** A compiled piece of a template: constant text, or a reader evaluated per render. */
export type Part = string | Reader;

// Both `{{…}}` paths and the legacy catalog build on these, so a path and its `$` twin read alike.

export const readMethod: Reader = (ctx) => ctx.request.method;
export const readPath: Reader = (ctx) => ctx.request.path;
export const readHost: Reader = (ctx) => ctx.request.host;
export const readScheme: Reader = (ctx) => ctx.request.scheme;
export const readProtocol: Reader = (ctx) => ctx.request.protocol;
export const readRequestUri: Reader = (ctx) => ctx.request.url;
export const readRequestBody: Reader = (ctx) => bodyText(ctx.request.body);
export const readResponseBody: Reader = (ctx) => bodyText(ctx.response.body);
export const readClientIp: Reader = (ctx) => ctx.request.remoteAddress;
/** Port 0 is never a real client port: it marks a synthetic request without a peer. */
export const readClientPort: Reader = (ctx) =>
  ctx.request.remotePort > 0 ? String(ctx.request.remotePort) : '';

export const readQueryString: Reader = (ctx) => {
  const params = new URLSearchParams();
  for (const [name, values] of ctx.request.query) for (const v of values) params.append(name, v);
  params.sort();
  return params.toString();
};

export const readConsumerName: Reader = (ctx) =>
  ownString(ctx.message, 'consumer.name') ?? ctx.consumer?.name ?? '';

export const readConsumerGroup: Reader = (ctx) =>
  ownString(ctx.message, 'consumer.group') ?? ctx.consumer?.group ?? '';

/** Status 0 (no response yet) renders `0`; a request-phase field always sees 0. */
export function responseStatus(phase: Phase): Part {
  return phase === 'request' ? '0' : (ctx) => String(ctx.response.status);
}

/** `name` must already be lowercase: header maps hold lowercase names. */
export function requestHeader(name: string): Reader {
  return (ctx) => firstValue(ctx.request.headers, name);
}

/** `name` must already be lowercase. */
export function responseHeader(name: string): Reader {
  return (ctx) => firstValue(ctx.response.headers, name);
}

export function queryParam(name: string): Reader {
  return (ctx) => ctx.request.query.get(name)?.[0] ?? '';
}

export function cookie(name: string): Reader {
  return (ctx) => ctx.request.cookies.get(name) ?? '';
}

/** Form fields exist only for form-urlencoded bodies; the context parses them lazily. */
export function formField(name: string): Reader {
  return (ctx) => ctx.request.form.get(name)?.[0] ?? '';
}

export function messageValue(key: string): Reader {
  return (ctx) => (Object.hasOwn(ctx.message, key) ? stringifyValue(ctx.message[key]) : '');
}

/** Strings as they are, scalars through `String`, objects and arrays as JSON; absent (or cyclic) is ''. */
export function stringifyValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      if (value === null) return '';
      if (Buffer.isBuffer(value)) return value.toString('utf8');
      try {
        return JSON.stringify(value, jsonBigint);
      } catch {
        // A cyclic value has no text form; failing the request over a log field would be worse.
        return '';
      }
    default:
      return '';
  }
}

/** HTTP header names are RFC 9110 tokens. */
export function isHeaderName(name: string): boolean {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name);
}

function jsonBigint(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? String(value) : value;
}

function firstValue(headers: HeaderMap, name: string): string {
  const value = headers[name];
  if (value === undefined) return '';
  return typeof value === 'string' ? value : (value[0] ?? '');
}

function bodyText(body: Buffer | null): string {
  return body === null ? '' : body.toString('utf8');
}

function ownString(map: Record<string, unknown>, key: string): string | undefined {
  return Object.hasOwn(map, key) ? stringifyValue(map[key]) : undefined;
}
