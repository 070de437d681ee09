/**
 * The in-run peer `npm run bench` holds the gateway to: the leanest correct
 * reverse proxy we know how to write on Node.js. node:http in; undici `Pool`
 * out through `dispatch()` with a handler whose methods write straight into
 * the ServerResponse (the core path `Pool.stream()` runs, minus its factory
 * callback and header-object parsing). It does what no gateway may skip:
 * keep-alive on both sides, hop-by-hop fields (RFC 9110 §7.6.1) and the fields
 * `Connection` lists stripped in both directions, request bodies streamed only
 * when the request has one, back-pressure, 502 on upstream failure, and the
 * upstream exchange aborted when the client goes away.
 *
 * Environment: UPSTREAM_PORT (required), PORT (default 0), TLS_CERT and
 * TLS_KEY (PEM file paths: serve HTTPS instead, for the tls scenario of
 * bench/scenario-table.ts). Prints `listening <port>` once bound.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { Pool, type Dispatcher } from 'undici';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
/**
 * Never sent upstream besides the hop-by-hop fields: node:http already
 * answered `Expect: 100-continue` on the inbound side (and undici refuses it).
 */
const REQUEST_ONLY = new Set([...HOP_BY_HOP, 'expect']);
/** Lengths of the names above: only a name of one of these lengths needs lowercasing and a lookup. */
const SKIP_LENGTHS = new Set([...REQUEST_ONLY].map((name) => name.length));

/** Field names the Connection values list (lowercased), or null when there is no such name. */
function connectionOptions(raw: readonly (string | Buffer)[]): Set<string> | null {
  let out: Set<string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 10 || name.toString().toLowerCase() !== 'connection') continue;
    for (const token of raw[i + 1]!.toString().split(',')) {
      const option = token.trim().toLowerCase();
      if (option !== '' && option !== 'close' && !HOP_BY_HOP.has(option)) (out ??= new Set()).add(option);
    }
  }
  return out;
}

/** True when `name` (any case) is in `skip` or listed in Connection. */
function skipped(name: string, skip: Set<string>, listed: Set<string> | null): boolean {
  if (listed === null && !SKIP_LENGTHS.has(name.length)) return false;
  const lower = name.toLowerCase();
  return skip.has(lower) || (listed !== null && listed.has(lower));
}

/** The client's header list as sent upstream, and whether the request has a body (a length or a coding). */
function requestHeaders(raw: readonly string[]): { headers: string[]; hasBody: boolean } {
  const listed = connectionOptions(raw);
  const headers: string[] = [];
  let hasBody = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if ((name.length === 14 || name.length === 17) && !hasBody) {
      const lower = name.toLowerCase();
      hasBody = lower === 'content-length' || lower === 'transfer-encoding';
    }
    if (!skipped(name, REQUEST_ONLY, listed)) headers.push(name, raw[i + 1]!);
  }
  return { headers, hasBody };
}

/** undici's raw response headers as the flat list `writeHead` takes, hop-by-hop fields dropped. */
function responseHeaders(raw: readonly Buffer[]): string[] {
  const listed = connectionOptions(raw);
  const headers: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1');
    if (!skipped(name, HOP_BY_HOP, listed)) headers.push(name, raw[i + 1]!.toString('latin1'));
  }
  return headers;
}

const clientGone = new Error('client closed the connection');

/** One proxied exchange, as undici's core handler interface (the unwrapped one `stream()` uses). */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  #abort: ((err?: Error) => void) | null = null;
  #resume: (() => void) | null = null;
  /** The exchange is over for us: completed, failed, or the client left. */
  #done = false;
  #clientLeft = false;

  constructor(res: ServerResponse) {
    this.#res = res;
    res.once('close', this.onClientClose);
  }

  /** Bound per exchange (a listener needs a function): a client leaving early aborts the upstream side. */
  readonly onClientClose = (): void => {
    if (this.#done || this.#res.writableFinished) return;
    this.#done = true;
    this.#clientLeft = true;
    this.#abort?.(clientGone);
  };

  onConnect(abort: (err?: Error) => void): void {
    if (this.#clientLeft) abort(clientGone);
    else this.#abort = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (status < 200) return true; // 1xx: the real response follows
    this.#resume = resume;
    this.#res.writeHead(status, responseHeaders(raw));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#res.write(chunk)) return true;
    if (this.#resume !== null) this.#res.once('drain', this.#resume);
    return false;
  }

  onComplete(): void {
    this.#done = true;
    this.#res.end();
  }

  onError(): void {
    if (this.#clientLeft) return;
    this.#done = true;
    if (this.#res.headersSent) {
      this.#res.destroy();
      return;
    }
    this.#res.writeHead(502, { 'content-length': '0' });
    this.#res.end();
  }
}

const upstreamPort = Number(process.env.UPSTREAM_PORT);
if (!Number.isInteger(upstreamPort) || upstreamPort <= 0) throw new Error('UPSTREAM_PORT is required');
// The gateway's upstream pool shape: unbounded connections, keep-alive, no pipelining.
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { pipelining: 1, keepAliveTimeout: 60_000 });

const handle = (req: IncomingMessage, res: ServerResponse): void => {
  const { headers, hasBody } = requestHeaders(req.rawHeaders);
  pool.dispatch(
    {
      method: req.method as Dispatcher.HttpMethod,
      path: req.url ?? '/',
      headers,
      // A GET handed a stream body would go out chunked: only requests that have a body stream one.
      body: hasBody ? req : null,
    },
    new Exchange(res),
  );
};
const server =
  process.env.TLS_CERT === undefined || process.env.TLS_KEY === undefined
    ? createServer(handle)
    : createHttpsServer(
        { cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY) },
        handle,
      );
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
