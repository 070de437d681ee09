import { lookup } from 'node:dns/promises';
import { createSocket } from 'node:dgram';
import { appendFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { exchange, type ExchangeLimits } from '../../../outbound/exchange.js';
import { acquirePool, type PoolLease } from '../../../outbound/pool-registry.js';
import { calloutTls, type CalloutTlsConfig } from '../../callout-tls.js';
import { ConfigError } from '../../../core/plugin.js';
import { Undeliverable } from './batch.js';

export interface HttpAnswer {
  status: number;
  body: Buffer;
}

export interface HttpSend {
  method?: string;
  /** Path and query; the endpoint's own when absent. */
  path?: string;
  /** Flat `[name, value, …]` list. */
  headers: string[];
  body: Buffer | string;
}

export interface HttpEndpointOptions {
  sslVerify: boolean;
  /** The logger's `tls` key: CA, client certificate, server name (docs/outbound-tls.md). */
  tls?: CalloutTlsConfig | undefined;
  timeoutMs: number;
}

/**
 * One collector URL on the shared outbound pools. The URL is configuration
 * only (docs/templates.md#fields-that-are-never-templated: logger endpoints), checked here at load.
 */
export class HttpEndpoint {
  readonly url: URL;
  readonly #lease: PoolLease;
  readonly #limits: ExchangeLimits;

  constructor(raw: string, key: string, options: HttpEndpointOptions) {
    this.url = parseHttpUrl(raw, key);
    const https = this.url.protocol === 'https:';
    this.#lease = acquirePool({
      origin: this.url.origin,
      tls: https ? calloutTls(options.sslVerify, options.tls) : null,
      connectTimeoutMs: options.timeoutMs,
    });
    this.#limits = { deadlineMs: options.timeoutMs, idleMs: options.timeoutMs, streaming: false };
  }

  /** The endpoint's path plus query, as it goes on the request line. */
  get path(): string {
    return `${this.url.pathname}${this.url.search}`;
  }

  /**
   * Sends one request. A 2xx resolves; a 4xx other than 408/429 is
   * {@link Undeliverable} (a retry would be refused the same way); anything
   * else rejects and may be retried.
   */
  async send(request: HttpSend): Promise<HttpAnswer> {
    const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    const result = await exchange(
      this.#lease.pool,
      { method: request.method ?? 'POST', path: request.path ?? this.path, headers: request.headers, body },
      this.#limits,
      null,
      null,
    );
    const answer = { status: result.status, body: result.body ?? Buffer.alloc(0) };
    if (answer.status >= 200 && answer.status < 300) return answer;
    const message = `${this.url.origin} answered ${answer.status}: ${answer.body.toString('utf8', 0, 200)}`;
    if (answer.status >= 400 && answer.status < 500 && answer.status !== 408 && answer.status !== 429) {
      throw new Undeliverable(message);
    }
    throw new Error(message);
  }

  release(): void {
    this.#lease.release();
  }
}

/** Several collector addresses used in turn, one per shipment. */
export class EndpointRing {
  readonly #endpoints: HttpEndpoint[];
  #next = 0;

  constructor(endpoints: HttpEndpoint[]) {
    this.#endpoints = endpoints;
  }

  next(): HttpEndpoint {
    const endpoint = this.#endpoints[this.#next % this.#endpoints.length]!;
    this.#next = (this.#next + 1) % this.#endpoints.length;
    return endpoint;
  }

  release(): void {
    for (const e of this.#endpoints) e.release();
  }
}

/**
 * The ring for the usual pair of keys: one address (`single`) or several
 * (`list`, preferred when both are set). `path` is appended to each base.
 */
export function endpointRing(
  addrs: { single: string | undefined; list: string[] | undefined; singleKey: string; listKey: string },
  path: string,
  options: HttpEndpointOptions,
): EndpointRing {
  if (addrs.list !== undefined) {
    return new EndpointRing(
      addrs.list.map((addr, i) => new HttpEndpoint(joinUrl(addr, path), `${addrs.listKey}[${i}]`, options)),
    );
  }
  if (addrs.single === undefined) {
    throw new ConfigError(addrs.singleKey, `set ${addrs.singleKey} or ${addrs.listKey}`);
  }
  return new EndpointRing([new HttpEndpoint(joinUrl(addrs.single, path), addrs.singleKey, options)]);
}

export function parseHttpUrl(raw: string, key: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(key, `'${raw}' is not a URL: use http(s)://host[:port][/path]`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(key, `'${raw}' must start with http:// or https://`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError(key, 'must not carry credentials: use the authentication keys');
  }
  return url;
}

/** Joins a base URL (which may carry a path prefix) and a path. */
export function joinUrl(base: string, path: string): string {
  if (path === '') return base;
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/**
 * Opens a connection, writes `payload`, half-closes. Resolves once the data
 * is handed to the kernel; `timeoutMs` bounds connect and write.
 */
export function tcpSend(host: string, port: number, payload: Buffer, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    socket.unref();
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no progress within ${timeoutMs} ms`)));
    socket.on('error', reject);
    socket.once('connect', () => socket.end(payload, () => resolve()));
    // The collector may keep its side open; nothing more is read from it.
    socket.resume();
  });
}

/** Sends each datagram in order from a fresh socket; `timeoutMs` bounds the lookup and all sends. */
export async function udpSend(
  host: string,
  port: number,
  datagrams: Buffer[],
  timeoutMs: number,
): Promise<void> {
  const { address, family } = await lookup(host);
  const socket = createSocket(family === 6 ? 'udp6' : 'udp4');
  socket.unref();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      (async () => {
        for (const datagram of datagrams) {
          await new Promise<void>((resolve, reject) =>
            socket.send(datagram, port, address, (err) => (err ? reject(err) : resolve())),
          );
        }
      })(),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no send within ${timeoutMs} ms`)), timeoutMs);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
    socket.close();
  }
}

/** Appends to a file, creating it (not its directory) when absent. */
export function fileAppend(path: string, data: string): Promise<void> {
  return appendFile(path, data, 'utf8');
}

/** Newline-delimited JSON: one document per line, the last one terminated too. */
export function ndjson(items: readonly unknown[]): string {
  let out = '';
  for (const item of items) out += JSON.stringify(item) + '\n';
  return out;
}
