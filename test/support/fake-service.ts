import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How a fake provider misbehaves, for the provider-failure tests. */
export type Fault =
  | 'none'
  /** 500 with a text body. */
  | 'status-500'
  /** Accepts the request and never answers. */
  | 'hang'
  /** 200 with an HTML maintenance page. */
  | 'garbage'
  /** Closes the connection without answering. */
  | 'reset';

/** One request as the fake received it. */
export interface FakeCall {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body as a form (`application/x-www-form-urlencoded`) or JSON object; empty when neither. */
  form: URLSearchParams;
  json: Record<string, unknown> | undefined;
}

export interface FakeAnswer {
  status: number;
  json?: unknown;
  /** A raw body (with `contentType`), instead of `json`. */
  text?: string;
  contentType?: string;
  headers?: Record<string, string | string[]>;
}

/** Answers one route; `undefined` falls through to a 404. */
export type FakeRoute = (call: FakeCall) => FakeAnswer | undefined;

export interface FakeService {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Every request, in order. */
  readonly calls: FakeCall[];
  /** Applies to every path, or only to `faultPath` when set. */
  fault: Fault;
  faultPath: string | undefined;
  /** Calls to `path` so far. */
  count(path: string): number;
  close(): Promise<void>;
}

/**
 * An HTTP server on 127.0.0.1 that routes `"<METHOD> <path>"` (or
 * `"<METHOD> <prefix>*"`) to handlers written in a provider's real wire
 * format, records every call, and can be told to fail like a sick provider.
 */
export async function startFakeService(routes: Record<string, FakeRoute>): Promise<FakeService> {
  const calls: FakeCall[] = [];
  const sockets = new Set<Socket>();
  const exact = new Map<string, FakeRoute>();
  const prefixes: [string, FakeRoute][] = [];
  for (const [key, route] of Object.entries(routes)) {
    if (key.endsWith('*')) prefixes.push([key.slice(0, -1), route]);
    else exact.set(key, route);
  }

  const answer = (res: ServerResponse, reply: FakeAnswer): void => {
    const body = reply.text ?? (reply.json === undefined ? '' : JSON.stringify(reply.json));
    const type = reply.contentType ?? (reply.json === undefined ? 'text/plain' : 'application/json');
    res.writeHead(reply.status, { 'content-type': type, ...reply.headers }).end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake.test');
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      const text = body.toString('utf8');
      let json: Record<string, unknown> | undefined;
      if (type.includes('json')) {
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
      }
      const call: FakeCall = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        form: new URLSearchParams(type.includes('x-www-form-urlencoded') ? text : ''),
        json,
      };
      calls.push(call);
      const faulty =
        state.fault !== 'none' && (state.faultPath === undefined || state.faultPath === url.pathname);
      if (faulty) {
        if (state.fault === 'hang') return;
        if (state.fault === 'reset') {
          req.socket.destroy();
          return;
        }
        if (state.fault === 'status-500') {
          answer(res, { status: 500, text: 'internal error' });
          return;
        }
        answer(res, { status: 200, text: '<html><body>maintenance</body></html>', contentType: 'text/html' });
        return;
      }
      const key = `${call.method} ${call.path}`;
      const route = exact.get(key) ?? prefixes.find(([prefix]) => key.startsWith(prefix))?.[1];
      answer(res, route?.(call) ?? { status: 404, json: { error: 'not_found' } });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const state: FakeService = {
    url: `http://127.0.0.1:${port}`,
    port,
    calls,
    fault: 'none',
    faultPath: undefined,
    count: (path) => calls.filter((c) => c.path === path).length,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state;
}

/** The Basic credentials of a call, if any. */
export function basicCredentials(call: FakeCall): [string, string] | undefined {
  const header = call.headers.authorization ?? '';
  if (!/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

/** The bearer token of a call, if any. */
export function bearerOf(call: FakeCall): string | undefined {
  const match = /^bearer\s+(.+)$/i.exec(call.headers.authorization ?? '');
  return match?.[1];
}

/** A string field of the call's JSON body, `''` when absent or not a string. */
export function jsonField(call: FakeCall, name: string): string {
  const value = call.json?.[name];
  return typeof value === 'string' ? value : '';
}
