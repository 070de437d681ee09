import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { Context } from '../engine/context.js';
import { NO_ROUTE_BODY } from '../engine/errors.js';
import { runPolicy, type RunHooks } from '../engine/run.js';
import type { RouteTarget } from '../engine/compile.js';
import { BodyTooLarge, hasBody, readBody } from './request-body.js';
import { clientCertIdentity } from './client-cert.js';
import { peerOf } from './listener.js';
import { sendJson, sendResponse } from './respond.js';
import type { RuntimeSlot } from './runtime-slot.js';

/** Both HTTP/1.1 and HTTP/2 (compatibility API) requests go through one handler. */
export type ServerRequest = IncomingMessage | Http2ServerRequest;
export type ServerReply = ServerResponse | Http2ServerResponse;

export interface DataPlaneOptions {
  current(): RuntimeSlot;
  maxBodyBytes: number;
  hooks: RunHooks;
  /** Called once per finished request with route ('' when unrouted) and status; metrics. */
  onFinished?: (route: string, status: number, startedAt: number) => void;
}

/** HTTP/2 carries the authority and request line as pseudo-headers; policies see plain headers with `host`. */
function http2Headers(headers: IncomingMessage['headers']): IncomingMessage['headers'] {
  const out: IncomingMessage['headers'] = {};
  for (const name in headers) if (name.charCodeAt(0) !== 58 /* ':' */) out[name] = headers[name];
  const authority = headers[':authority'];
  if (out.host === undefined && typeof authority === 'string') out.host = authority;
  return out;
}

/** Puts the verified mTLS identity where policies read it (the reference's reserved message keys). */
function exposeClientCert(ctx: Context, socket: object): void {
  const id = clientCertIdentity(socket);
  if (id === null) return;
  ctx.message['__client_cert_fingerprint'] = id.fingerprint;
  if (id.subjectCn !== undefined) ctx.message['__client_cert_subject_cn'] = id.subjectCn;
  if (id.sanDns.length > 0) ctx.message['__client_cert_san_dns'] = id.sanDns;
}

/** Request target without scheme/authority; absolute-form (`http://h/p`) is reduced to its path. */
function originForm(url: string): string | undefined {
  if (url.startsWith('/')) return url;
  if (url.startsWith('http://') || url.startsWith('https://')) {
    const slash = url.indexOf('/', url.indexOf('//') + 2);
    return slash === -1 ? '/' : url.slice(slash);
  }
  return undefined;
}

/** The data-plane request handler: route, buffer the body, run the policy graph, answer. */
export function createDataPlaneHandler(options: DataPlaneOptions) {
  const { hooks, maxBodyBytes, onFinished } = options;

  const execute = (
    slot: RuntimeSlot,
    target: RouteTarget,
    req: ServerRequest,
    res: ServerReply,
    url: string,
    body: Buffer | null,
    startedAt: number,
  ) => {
    const socket = req.socket;
    const tls = (socket as TLSSocket).encrypted === true;
    const h2 = req.httpVersionMajor === 2;
    const peer = peerOf(req);
    const headers = h2 ? http2Headers(req.headers) : req.headers;
    const ctx = new Context(
      {
        method: req.method ?? 'GET',
        url,
        host: headers.host ?? '',
        scheme: tls ? 'https' : 'http',
        protocol: h2 ? 'http2' : 'http1',
        headers,
        remoteAddress: peer.address,
        remotePort: peer.port,
        body,
      },
      () => {
        const controller = new AbortController();
        res.once('close', () => {
          if (!res.writableFinished) controller.abort();
        });
        return controller.signal;
      },
    );
    ctx.route = target.route;
    ctx.policy = target.policy.name;
    if (tls) exposeClientCert(ctx, socket);
    const finish = () => {
      slot.release();
      onFinished?.(target.route, res.statusCode, startedAt);
    };
    const fail = (err: unknown) => {
      hooks.logger.error({ err, route: target.route }, 'policy run failed unexpectedly');
      ctx.response.discardStream();
      if (!res.headersSent)
        sendJson(res, 500, { error: 'internal_error', message: 'Unhandled error in routing policy' });
      else res.destroy();
      finish();
    };
    let result: void | Promise<void>;
    try {
      result = runPolicy(target.policy, ctx, hooks);
    } catch (err) {
      fail(err);
      return;
    }
    if (result === undefined) sendResponse(res, ctx, finish);
    else result.then(() => sendResponse(res, ctx, finish), fail);
  };

  return function handle(req: ServerRequest, res: ServerReply): void {
    const startedAt = performance.now();
    const url = originForm(req.url ?? '');
    if (url === undefined) {
      sendJson(res, 400, { error: 'bad_request', message: 'request target must be a path' });
      onFinished?.('', 400, startedAt);
      return;
    }
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const slot = options.current();
    const method = req.method ?? 'GET';
    const found = slot.runtime.router.match(
      method,
      req.headers.host ?? (req.headers[':authority'] as string | undefined),
      path,
      req.headers,
    );
    if (found === undefined) {
      sendJson(res, 404, NO_ROUTE_BODY);
      req.resume();
      onFinished?.('', 404, startedAt);
      return;
    }
    slot.acquire();
    if (!hasBody(req)) {
      execute(slot, found.target, req, res, url, null, startedAt);
      return;
    }
    readBody(req, maxBodyBytes).then(
      (body) => execute(slot, found.target, req, res, url, body, startedAt),
      (err: unknown) => {
        slot.release();
        if (err instanceof BodyTooLarge) {
          sendJson(res, 413, { error: 'payload_too_large', message: err.message }, { connection: 'close' });
          onFinished?.(found.target.route, 413, startedAt);
        } else {
          res.destroy();
        }
      },
    );
  };
}
