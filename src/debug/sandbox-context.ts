import { Context, type HeaderMap, type Protocol } from '../core/context.js';

/** A request field that cannot become a context; the sandbox answers 400 with this message. */
export class SandboxInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxInputError';
  }
}

/** The validated synthetic request of a sandbox run (docs/debugging.md#the-sandbox), with every default applied. */
export interface SandboxSeed {
  method: string;
  path: string;
  query: [string, string][];
  host: string;
  scheme: 'http' | 'https';
  headers: HeaderMap;
  body: Buffer | null;
  remoteAddress: string;
  remotePort: number;
  protocol: Protocol;
  message: Record<string, unknown>;
  response: { status: number; headers: HeaderMap; body: Buffer | null };
}

const CONTEXT_FIELDS = new Set([
  'method',
  'path',
  'host',
  'scheme',
  'headers',
  'query_params',
  'body',
  'body_base64',
  'remote_addr',
  'protocol',
  'message',
  'response',
]);
const RESPONSE_FIELDS = new Set(['status_code', 'headers', 'body']);
const PROTOCOLS = new Set<Protocol>(['http1', 'http2', 'websocket', 'tcp', 'udp']);

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates a sandbox `context`: all fields optional, unknown ones rejected
 * (a typo such as `paths` must not silently become `GET /`). The aliases
 * `uri` and `query` and a trace snapshot (`{request, response, message,
 * errors}`, bodies as `{len, text}`) are normalized first, so a context copied
 * out of a trace replays as is (redacted values replay literally).
 */
export function parseSandboxContext(raw: unknown): SandboxSeed {
  if (raw !== undefined && raw !== null && !isObject(raw)) {
    throw new SandboxInputError("'context' must be an object");
  }
  const input = normalize(isObject(raw) ? raw : {});
  for (const key of Object.keys(input)) {
    if (!CONTEXT_FIELDS.has(key)) {
      throw new SandboxInputError(
        `context: unknown field '${key}' (expected one of ${[...CONTEXT_FIELDS, 'uri', 'query'].join(', ')})`,
      );
    }
  }
  const path = optionalString(input, 'path', 'context') ?? '/';
  if (!path.startsWith('/')) throw new SandboxInputError(`context.path must start with '/' (got '${path}')`);
  const q = path.indexOf('?');
  const query = q === -1 ? [] : [...new URLSearchParams(path.slice(q + 1))];
  for (const [name, values] of Object.entries(valueLists(input['query_params'], 'context.query_params')))
    for (const v of values) query.push([name, v]);
  const scheme = optionalString(input, 'scheme', 'context') ?? 'http';
  if (scheme !== 'http' && scheme !== 'https')
    throw new SandboxInputError(`context.scheme must be 'http' or 'https' (got '${scheme}')`);
  const protocol = (optionalString(input, 'protocol', 'context') ?? 'http1') as Protocol;
  if (!PROTOCOLS.has(protocol))
    throw new SandboxInputError(`context.protocol must be one of ${[...PROTOCOLS].join(', ')}`);
  const message = input['message'] ?? {};
  if (!isObject(message)) throw new SandboxInputError('context.message must be an object');
  const [remoteAddress, remotePort] = parseRemoteAddr(
    optionalString(input, 'remote_addr', 'context') ?? '127.0.0.1:0',
  );
  return {
    method: optionalString(input, 'method', 'context') ?? 'GET',
    path: q === -1 ? path : path.slice(0, q),
    query,
    host: optionalString(input, 'host', 'context') ?? 'sandbox.local',
    scheme,
    headers: headerMap(input['headers'], 'context.headers'),
    body: requestBody(input),
    remoteAddress,
    remotePort,
    protocol,
    message: structuredClone(message),
    response: responseSeed(input['response']),
  };
}

/** A fresh context for one run; `signal` aborts outbound calls when the deadline passes. */
export function sandboxContext(seed: SandboxSeed, signal: AbortSignal): Context {
  const ctx = new Context(
    {
      method: seed.method,
      url: seed.path,
      host: seed.host,
      scheme: seed.scheme,
      protocol: seed.protocol,
      headers: { ...seed.headers },
      remoteAddress: seed.remoteAddress,
      remotePort: seed.remotePort,
      body: seed.body,
    },
    signal,
  );
  if (seed.query.length > 0) {
    const query = new Map<string, string[]>();
    for (const [name, value] of seed.query) query.set(name, [...(query.get(name) ?? []), value]);
    ctx.request.query = query;
  }
  ctx.message = structuredClone(seed.message);
  ctx.response.status = seed.response.status;
  ctx.response.headers = { ...seed.response.headers };
  ctx.response.body = seed.response.body;
  return ctx;
}

/** Lifts a trace snapshot's `request` object, unwraps snapshot bodies and applies the aliases. */
function normalize(raw: Json): Json {
  const out: Json = { ...raw };
  const request = out['request'];
  if (isObject(request)) {
    delete out['request'];
    for (const [key, value] of Object.entries(request)) {
      if (key === 'body') {
        const body = snapshotBody(value);
        if (body !== undefined) out['body'] = body;
      } else out[key] = value;
    }
  }
  if (isObject(out['response'])) {
    const response = { ...out['response'] };
    const body = snapshotBody(response['body']);
    if (body === undefined) delete response['body'];
    else response['body'] = body;
    if ('status' in response) {
      response['status_code'] ??= response['status'];
      delete response['status'];
    }
    out['response'] = response;
  }
  delete out['errors'];
  for (const [alias, name] of [
    ['uri', 'path'],
    ['query', 'query_params'],
  ] as const) {
    if (alias in out) {
      out[name] ??= out[alias];
      delete out[alias];
    }
  }
  return out;
}

/** A snapshot body `{len, text?, …}` gives its text, or nothing when the text was not captured. */
function snapshotBody(value: unknown): unknown {
  if (isObject(value) && typeof value['len'] === 'number') {
    return typeof value['text'] === 'string' ? value['text'] : undefined;
  }
  return value;
}

function optionalString(input: Json, key: string, where: string): string | undefined {
  const value = input[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new SandboxInputError(`${where}.${key} must be a string`);
  return value;
}

/** Header and query values: a string or a list; numbers and booleans become strings. */
function valueLists(raw: unknown, where: string): Record<string, string[]> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw new SandboxInputError(`${where} must be an object of name → value or list`);
  const out: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(raw)) {
    const list = Array.isArray(value) ? value : [value];
    out[name] = list.map((v) => {
      if (typeof v === 'string') return v;
      if (typeof v === 'number' || typeof v === 'boolean') return String(v);
      throw new SandboxInputError(`${where}.${name} must be a string, number, boolean or a list of them`);
    });
  }
  return out;
}

function headerMap(raw: unknown, where: string): HeaderMap {
  const out: HeaderMap = {};
  for (const [name, values] of Object.entries(valueLists(raw, where))) {
    const key = name.toLowerCase();
    const merged = [...listOf(out[key]), ...values];
    out[key] = merged.length === 1 ? merged[0] : merged;
  }
  return out;
}

const listOf = (v: string | string[] | undefined): string[] =>
  v === undefined ? [] : Array.isArray(v) ? v : [v];

/** Text body: strings as is; objects, arrays, numbers and booleans as their JSON text. */
function bodyText(value: unknown, where: string): Buffer | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return Buffer.from(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'object')
    return Buffer.from(JSON.stringify(value));
  throw new SandboxInputError(`${where} must be text or a JSON value`);
}

function requestBody(input: Json): Buffer | null {
  const base64 = input['body_base64'];
  if (base64 !== undefined && base64 !== null) {
    if (input['body'] !== undefined && input['body'] !== null)
      throw new SandboxInputError("context: give only one of 'body' or 'body_base64'");
    if (typeof base64 !== 'string' || !/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(base64))
      throw new SandboxInputError('context.body_base64 is not valid base64');
    return Buffer.from(base64, 'base64');
  }
  return bodyText(input['body'], 'context.body');
}

function responseSeed(raw: unknown): SandboxSeed['response'] {
  if (raw === undefined || raw === null) return { status: 0, headers: {}, body: null };
  if (!isObject(raw)) throw new SandboxInputError('context.response must be an object');
  for (const key of Object.keys(raw)) {
    if (!RESPONSE_FIELDS.has(key))
      throw new SandboxInputError(
        `context.response: unknown field '${key}' (expected status_code, headers or body)`,
      );
  }
  const status = raw['status_code'] ?? 0;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999)
    throw new SandboxInputError('context.response.status_code must be an integer from 0 to 999');
  return {
    status,
    headers: headerMap(raw['headers'], 'context.response.headers'),
    body: bodyText(raw['body'], 'context.response.body'),
  };
}

/** `ip:port`, `[v6]:port` or a bare address (port 0). */
function parseRemoteAddr(text: string): [string, number] {
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracket) return [bracket[1] ?? '', Number(bracket[2] ?? 0)];
  const colon = text.lastIndexOf(':');
  if (colon !== -1 && text.indexOf(':') === colon) {
    const port = Number(text.slice(colon + 1));
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new SandboxInputError(`context.remote_addr has an invalid port: '${text}'`);
    return [text.slice(0, colon), port];
  }
  return [text, 0];
}
