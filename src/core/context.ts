import type { Readable } from 'node:stream';
import { ClientTransport } from './transport.js';

/** Header map with lowercased names; a value is a string or, for repeated headers, a list. */
export type HeaderMap = Record<string, string | string[] | undefined>;

export type Protocol = 'http1' | 'http2' | 'websocket' | 'tcp' | 'udp';

/** One record appended to `ctx.errors` by a failing node (docs/configuration.md#errors-at-run-time). */
export interface ErrorRecord {
  node_id: string;
  code: string;
  message: string;
  metadata: Record<string, unknown>;
}

/** One upstream answer: which node sent the request where, and how long the answer took. */
export interface UpstreamVisit {
  readonly where: Readonly<Record<string, string>>;
  readonly address: string;
  readonly status: number;
  readonly seconds: number;
}

/** Identity attached by auth plugins; also mirrored into `message.consumer.*`. */
export interface Consumer {
  name: string;
  group?: string;
}

export interface RequestInit {
  method: string;
  /** Path plus optional `?query`, as received. */
  url: string;
  host: string;
  scheme: 'http' | 'https';
  protocol: Protocol;
  headers: HeaderMap;
  remoteAddress: string;
  remotePort: number;
  body?: Buffer | null;
}

/** The request part of the context. Query, cookies and form fields are parsed on first use. */
export class RequestPart {
  method: string;
  path: string;
  /** Raw query string without `?` ('' when absent). Setting it resets the parsed query. */
  #rawQuery: string;
  host: string;
  scheme: 'http' | 'https';
  protocol: Protocol;
  headers: HeaderMap;
  remoteAddress: string;
  remotePort: number;
  body: Buffer | null;
  #query: Map<string, string[]> | undefined;
  #cookies: Map<string, string> | undefined;
  #form: Map<string, string[]> | undefined;

  constructor(init: RequestInit) {
    this.method = init.method;
    const q = init.url.indexOf('?');
    this.path = q === -1 ? init.url : init.url.slice(0, q);
    this.#rawQuery = q === -1 ? '' : init.url.slice(q + 1);
    this.host = init.host;
    this.scheme = init.scheme;
    this.protocol = init.protocol;
    this.headers = init.headers;
    this.remoteAddress = init.remoteAddress;
    this.remotePort = init.remotePort;
    this.body = init.body ?? null;
  }

  get rawQuery(): string {
    return this.#rawQuery;
  }

  set rawQuery(value: string) {
    this.#rawQuery = value;
    this.#query = undefined;
  }

  /** Path plus `?query` when a query is present: what goes on the request line upstream. */
  get url(): string {
    return this.#rawQuery === '' ? this.path : `${this.path}?${this.#rawQuery}`;
  }

  /**
   * Removes every parameter named in `names` from the query, keeping the
   * others byte for byte (order and encoding) as the client sent them.
   */
  dropQueryParams(...names: string[]): void {
    if (this.#rawQuery === '') return;
    const drop = new Set(names);
    const kept = this.#rawQuery.split('&').filter((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      return !drop.has(decodeQueryName(rawName));
    });
    this.rawQuery = kept.join('&');
  }

  get query(): Map<string, string[]> {
    this.#query ??= parseQuery(this.#rawQuery);
    return this.#query;
  }

  set query(value: Map<string, string[]>) {
    this.#query = value;
    this.#rawQuery = serializeQuery(value);
  }

  get cookies(): Map<string, string> {
    this.#cookies ??= parseCookies(this.headers.cookie);
    return this.#cookies;
  }

  /** Form fields, only for `application/x-www-form-urlencoded` bodies. */
  get form(): Map<string, string[]> {
    if (this.#form === undefined) {
      const type = firstHeader(this.headers, 'content-type') ?? '';
      this.#form =
        this.body !== null && type.toLowerCase().startsWith('application/x-www-form-urlencoded')
          ? parseQuery(this.body.toString('utf8'))
          : new Map();
    }
    return this.#form;
  }

  /** `ip:port`, as docs/templates.md shows `remote_addr`. */
  get remoteAddr(): string {
    return this.remoteAddress.includes(':')
      ? `[${this.remoteAddress}]:${this.remotePort}`
      : `${this.remoteAddress}:${this.remotePort}`;
  }

  header(name: string): string | undefined {
    return firstHeader(this.headers, name);
  }
}

/** The response part: status 0 means "not set yet" and is sent as 200. */
export class ResponsePart {
  status = 0;
  headers: HeaderMap = {};
  body: Buffer | null = null;
  /** Upstream body still flowing (streaming relay); mutually exclusive with `body`. */
  stream: Readable | null = null;
  /**
   * True while the body is an upstream answer relayed in streaming mode (no later node reads it),
   * also when it arrived whole with its headers and is held as `body`: traces report it as streamed.
   */
  relayed = false;

  header(name: string): string | undefined {
    return firstHeader(this.headers, name);
  }

  /** Replaces the whole body with a JSON document and sets the content type. */
  json(status: number, payload: unknown): void {
    this.status = status;
    this.setBody(JSON.stringify(payload), 'application/json');
  }

  setBody(body: string | Buffer, contentType?: string): void {
    this.discardStream();
    this.relayed = false;
    this.body = typeof body === 'string' ? Buffer.from(body) : body;
    delete this.headers['content-length'];
    delete this.headers['transfer-encoding'];
    if (contentType !== undefined) this.headers['content-type'] = contentType;
  }

  discardStream(): void {
    if (this.stream !== null) {
      this.stream.destroy();
      this.stream = null;
    }
  }
}

export interface AbortListener {
  handleEvent(event: Event): void;
}

/** The subset of AbortSignal that outbound exchanges listen on. */
export interface AbortLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: AbortListener): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

const ABORT_EVENT = new Event('abort');

/** A one-shot "client went away" notice, far cheaper than an AbortController per request. */
export class ClientGone implements AbortLike {
  aborted = false;
  #listeners: AbortListener[] | null = null;

  addEventListener(_type: 'abort', listener: AbortListener): void {
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const list = this.#listeners;
    if (list === null) return;
    const i = list.indexOf(listener);
    if (i !== -1) list.splice(i, 1);
  }

  fire(): void {
    if (this.aborted) return;
    this.aborted = true;
    const list = this.#listeners;
    this.#listeners = null;
    if (list !== null) for (const l of list) l.handleEvent(ABORT_EVENT);
  }
}

export class Context {
  readonly request: RequestPart;
  readonly response = new ResponsePart();
  message: Record<string, unknown> = {};
  readonly errors: ErrorRecord[] = [];
  consumer: Consumer | undefined;
  /** Route and policy names, for metrics, logs and templates. */
  route = '';
  policy = '';
  /** The last upstream answer (target, seconds to its headers): metrics and the access log (docs/metrics.md). */
  upstream: UpstreamVisit | undefined = undefined;
  /** `performance.now()` when the context was built: loggers and tracers measure latency from it. */
  readonly startedAt = performance.now();
  /** Fired by the server when the client connection closes before the response went out. */
  readonly clientGone = new ClientGone();
  /**
   * Called once the policy run ended, just before the server sends `response` (proxy-mirror's
   * `compare`): a watcher may only observe (listen on `response.stream`), never change the answer.
   */
  responseWatchers: ((ctx: Context) => void)[] | undefined = undefined;
  /**
   * The client side a node takes over (streamed body, WebSocket, gRPC, gRPC-Web: ./transport.ts);
   * undefined for a plain request, created by {@link transportOf} on first use.
   */
  transport: ClientTransport | undefined = undefined;
  #signal: AbortSignal | undefined;

  /** A given `signal` (tests, sandbox) also counts as the client going away when it aborts. */
  constructor(request: RequestInit, given?: AbortSignal | (() => AbortSignal)) {
    this.request = new RequestPart(request);
    const signal = typeof given === 'function' ? given() : given;
    if (signal !== undefined) {
      this.#signal = signal;
      if (signal.aborted) this.clientGone.fire();
      else signal.addEventListener('abort', () => this.clientGone.fire(), { once: true });
    }
  }

  /**
   * A real AbortSignal following `clientGone`, for APIs that need one (fetch).
   * Created on first use: the hot path (the upstream node) listens on
   * `clientGone`, which costs no AbortController per request.
   */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      const controller = new AbortController();
      if (this.clientGone.aborted) controller.abort();
      else this.clientGone.addEventListener('abort', { handleEvent: () => controller.abort() });
      this.#signal = controller.signal;
    }
    return this.#signal;
  }

  /** Sets the consumer identity and its `message.consumer.*` mirror. */
  setConsumer(consumer: Consumer): void {
    this.consumer = consumer;
    this.message['consumer.name'] = consumer.name;
    if (consumer.group !== undefined) this.message['consumer.group'] = consumer.group;
  }
}

/** The context's transport, created on first use. */
export function transportOf(ctx: Context): ClientTransport {
  return (ctx.transport ??= new ClientTransport());
}

/** Runs the context's response watchers; one that throws is skipped, the answer goes out anyway. */
export function notifyResponseWatchers(ctx: Context): void {
  const watchers = ctx.responseWatchers;
  if (watchers === undefined) return;
  ctx.responseWatchers = undefined;
  for (const watch of watchers) {
    try {
      watch(ctx);
    } catch {
      // An observer's failure must not change what the client gets.
    }
  }
}

export function firstHeader(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

function decodeQueryName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

export function parseQuery(raw: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (raw === '') return out;
  for (const [k, v] of new URLSearchParams(raw)) {
    const list = out.get(k);
    if (list === undefined) out.set(k, [v]);
    else list.push(v);
  }
  return out;
}

export function serializeQuery(query: Map<string, string[]>): string {
  const params = new URLSearchParams();
  for (const [k, values] of query) for (const v of values) params.append(k, v);
  return params.toString();
}

export function parseCookies(header: string | string[] | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (header === undefined) return out;
  const text = Array.isArray(header) ? header.join('; ') : header;
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || out.has(name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out.set(name, decodeURIComponent(value));
    } catch {
      out.set(name, value);
    }
  }
  return out;
}
