import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tempDir } from './temp-dir.js';
import { createAuthority } from './certs.js';

/** What an origin saw of one request. */
export interface SeenRequest {
  method: string;
  url: string;
  httpVersion: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: Buffer;
}

/** Handles one request; h2 origins get the compatible Http2ServerRequest/Response objects. */
export type OriginHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => unknown;

/** A real origin on 127.0.0.1, port chosen by the OS. */
export interface Origin {
  readonly name: string;
  readonly port: number;
  readonly host: '127.0.0.1';
  /** `{host, port}` for an upstream `targets` entry. */
  readonly target: { host: string; port: number };
  readonly requests: SeenRequest[];
  /** Connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  readonly connections: number;
  /** Resolves when the origin has received `count` requests in total. */
  received(count: number): Promise<void>;
  /** Stops listening and drops open connections; the port is then dead. */
  close(): Promise<void>;
}

interface OriginOptions {
  name?: string;
  port?: number;
  https?: HttpsOptions;
  /** TLS with ALPN h2 (and HTTP/1.1 fallback). */
  http2?: HttpsOptions;
}

/** Answers with a JSON echo of the request and an `x-origin` header naming the origin. */
export function echo(name: string): (req: IncomingMessage, res: ServerResponse, body: Buffer) => void {
  return (req, res, body) => {
    const payload = JSON.stringify({
      origin: name,
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: body.toString('utf8'),
    });
    res.writeHead(200, { 'content-type': 'application/json', 'x-origin': name });
    res.end(payload);
  };
}

/** Starts an origin; the handler sees the fully read request body. */
export async function startOrigin(handler: OriginHandler, options: OriginOptions = {}): Promise<Origin> {
  const requests: SeenRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        httpVersion: req.httpVersion,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
      });
      for (const w of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      Promise.resolve(handler(req, res, body)).catch((err: unknown) => {
        res.destroy(err instanceof Error ? err : new Error(String(err)));
      });
    });
  };
  const server: Server | ReturnType<typeof createSecureServer> =
    options.http2 !== undefined
      ? createSecureServer(
          { ...options.http2, allowHTTP1: true },
          onRequest as unknown as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
        )
      : options.https !== undefined
        ? createHttpsServer(options.https, onRequest)
        : createHttpServer(onRequest);
  const connectionEvent =
    options.https !== undefined || options.http2 !== undefined ? 'secureConnection' : 'connection';
  server.on(connectionEvent, (socket: Socket) => {
    sockets.add(socket);
    connections++;
    socket.on('close', () => sockets.delete(socket));
  });
  // TLS handshake failures (a client without a certificate) are part of some tests.
  server.on('tlsClientError', () => {});
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    name: options.name ?? `origin-${port}`,
    port,
    host: '127.0.0.1',
    target: { host: '127.0.0.1', port },
    requests,
    get connections() {
      return connections;
    },
    received(count) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A loopback port with nothing listening (bound a moment ago, then released). */
export async function deadPort(): Promise<number> {
  const probe = await startOrigin(() => {});
  await probe.close();
  return probe.port;
}

/**
 * Resolves the returned `release` to let a held handler continue: a manual
 * gate for origins that must pause mid-response until the test says so.
 */
export function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { wait, release };
}

/** PEM files of a throwaway PKI: one CA, a server cert for localhost/127.0.0.1, a client cert. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  remove(): void;
}

/** Generates a fresh PKI (CA, server for localhost/127.0.0.1, client) into a temporary directory. */
export function createTestPki(): TestPki {
  const tmp = tempDir('switchyard-pki-');
  const ca = createAuthority(tmp.path, 'ca');
  const server = ca.issue('server', { cn: 'localhost', dns: ['localhost'], ips: ['127.0.0.1'] });
  const client = ca.issue('client', { cn: 'switchyard-client', client: true });
  return {
    dir: tmp.path,
    caCert: ca.cert,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    remove: () => tmp.remove(),
  };
}
