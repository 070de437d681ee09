/**
 * The fixed-rate (open-loop) load driver of `npm run bench:scenarios`: it sends
 * requests on a schedule of `rate` per second whatever the answers do, and
 * measures each request's latency from the moment it was due (not the moment a
 * connection was free to send it), so a target that falls behind shows it in
 * the percentiles instead of slowing the load down (no coordinated omission).
 * wrk2 is not in Debian and h2load's `--rate` paces new connections, not
 * requests, so the scenario table uses this.
 *
 * HTTP/1.1 only, one request in flight per connection. Keep-alive mode opens
 * `connections` sockets first and queues a due request while all are busy;
 * new-connection mode opens a socket (a full TLS handshake for https) per
 * request and sends `Connection: close`.
 *
 * Run as a script: `node --import tsx bench/fixed-rate.ts '<json options>'`;
 * prints one JSON line, a {@link FixedRateResult}.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { pathToFileURL } from 'node:url';

export interface FixedRateOptions {
  url: string;
  headers: Record<string, string>;
  /** Requests per second. */
  rate: number;
  seconds: number;
  /** Keep-alive sockets (keep-alive mode), or the most sockets open at once (new-connection mode). */
  connections: number;
  newConnection: boolean;
}

export interface FixedRateResult {
  rate: number;
  /** Requests due over the run. */
  due: number;
  /** Answered with a 2xx. */
  ok: number;
  /** Answered with anything else. */
  non2xx: number;
  /** Socket errors, and requests still unanswered 2 s after the run. */
  errors: number;
  p50: number;
  p99: number;
  /** 2xx answers per second of the run. */
  achieved: number;
}

const LATE_MS = 2000;

interface Pending {
  due: number;
}

/** One HTTP/1.1 response at a time from a byte stream: calls `done(status)` at each response's end. */
class ResponseReader {
  #buffer: Buffer = Buffer.alloc(0);
  #status = 0;
  /** Body bytes still expected, -1 while reading the head, -2 for a chunked body. */
  #remaining = -1;

  constructor(private readonly done: (status: number) => void) {}

  push(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (this.#remaining === -1) {
        const end = this.#buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = this.#buffer.subarray(0, end).toString('latin1');
        this.#buffer = this.#buffer.subarray(end + 4);
        this.#status = Number(head.slice(9, 12));
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (length) this.#remaining = Number(length[1]);
        else if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) this.#remaining = -2;
        else this.#remaining = 0;
      }
      if (this.#remaining === -2) {
        const end = this.#buffer.indexOf('0\r\n\r\n');
        if (end < 0) return;
        this.#buffer = this.#buffer.subarray(end + 5);
      } else {
        if (this.#buffer.length < this.#remaining) return;
        this.#buffer = this.#buffer.subarray(this.#remaining);
      }
      this.#remaining = -1;
      this.done(this.#status);
    }
  }
}

export async function fixedRate(o: FixedRateOptions): Promise<FixedRateResult> {
  const url = new URL(o.url);
  const tls = url.protocol === 'https:';
  const port = Number(url.port || (tls ? 443 : 80));
  const host = url.hostname;
  const head =
    `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n` +
    Object.entries(o.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    (o.newConnection ? 'connection: close\r\n' : '') +
    '\r\n';
  const request = Buffer.from(head, 'latin1');
  const open = (): Socket =>
    tls
      ? tlsConnect({ host, port, rejectUnauthorized: false, servername: 'localhost' })
      : netConnect({ host, port });

  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let measuring = true;
  const record = (due: number, status: number): void => {
    if (!measuring) return;
    latencies.push(performance.now() - due);
    if (status >= 200 && status < 300) ok++;
    else non2xx++;
  };

  // Keep-alive: idle sockets take the next due request; queued ones wait for a socket.
  const queue: Pending[] = [];
  const idle: { send(p: Pending): void }[] = [];
  let open_ = 0;
  const keepAlive = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const socket = open();
      socket.setNoDelay(true);
      let current: Pending | null = null;
      const conn = {
        send(p: Pending) {
          current = p;
          socket.write(request);
        },
      };
      const next = (): void => {
        const p = queue.shift();
        if (p === undefined) idle.push(conn);
        else conn.send(p);
      };
      const reader = new ResponseReader((status) => {
        if (current !== null) record(current.due, status);
        current = null;
        next();
      });
      socket.on('data', (d: Buffer) => reader.push(d));
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        next();
        resolve();
      });
      socket.on('error', (err) => {
        if (measuring) errors++;
        reject(err);
      });
      socket.on('close', () => {
        const at = idle.indexOf(conn);
        if (at >= 0) idle.splice(at, 1);
        if (current !== null && measuring) errors++;
      });
    });

  // New connection per request, at most `connections` open at once.
  const fresh = (p: Pending): void => {
    open_++;
    const socket = open();
    socket.setNoDelay(true);
    let answered = false;
    const reader = new ResponseReader((status) => {
      answered = true;
      record(p.due, status);
      socket.destroy();
    });
    socket.on('data', (d: Buffer) => reader.push(d));
    socket.once(tls ? 'secureConnect' : 'connect', () => socket.write(request));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      open_--;
      if (!answered && measuring) errors++;
      const waiting = queue.shift();
      if (waiting !== undefined) fresh(waiting);
    });
  };

  const sockets: Promise<void>[] = [];
  if (!o.newConnection) {
    for (let i = 0; i < o.connections; i++) sockets.push(keepAlive());
    await Promise.all(sockets);
  }

  const start = performance.now();
  const total = Math.round(o.rate * o.seconds);
  let issued = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      const dueCount = Math.min(total, Math.floor(((now - start) / 1000) * o.rate));
      for (; issued < dueCount; issued++) {
        const p = { due: start + (issued * 1000) / o.rate };
        if (o.newConnection) {
          if (open_ < o.connections) fresh(p);
          else queue.push(p);
        } else {
          const conn = idle.pop();
          if (conn === undefined) queue.push(p);
          else conn.send(p);
        }
      }
      if (issued >= total) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  // Let the last requests finish; whatever is still unanswered by then counts as an error.
  const end = performance.now() + LATE_MS;
  while (ok + non2xx + errors < total && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
  measuring = false;
  const missing = total - ok - non2xx - errors;
  latencies.sort((a, b) => a - b);
  const pct = (q: number): number => {
    // Unanswered requests are slower than any answered one: they count at the top.
    const at = Math.min(total - 1, Math.floor(total * q));
    return at < latencies.length ? latencies[at]! : Infinity;
  };
  return {
    rate: o.rate,
    due: total,
    ok,
    non2xx,
    errors: errors + Math.max(0, missing),
    p50: pct(0.5),
    p99: pct(0.99),
    achieved: ok / o.seconds,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await fixedRate(JSON.parse(process.argv[2] ?? '{}') as FixedRateOptions);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
