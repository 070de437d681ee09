import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Context } from '../engine/context.js';
import { NO_ROUTE_BODY } from '../engine/errors.js';
import { runPolicy, type RunHooks } from '../engine/run.js';
import type { RouteTarget } from '../engine/compile.js';
import { BodyTooLarge, hasBody, readBody } from './request-body.js';
import { sendJson, sendResponse } from './respond.js';
import type { RuntimeSlot } from './runtime-slot.js';

export interface DataPlaneOptions {
  current(): RuntimeSlot;
  maxBodyBytes: number;
  hooks: RunHooks;
  /** Called once per finished request with route ('' when unrouted) and status; metrics. */
  onFinished?: (route: string, status: number, startedAt: number) => void;
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
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    body: Buffer | null,
    startedAt: number,
  ) => {
    const socket = req.socket;
    const tls = (socket as TLSSocket).encrypted === true;
    const ctx = new Context(
      {
        method: req.method ?? 'GET',
        url,
        host: req.headers.host ?? req.headers[':authority']?.toString() ?? '',
        scheme: tls ? 'https' : 'http',
        protocol: req.httpVersionMajor === 2 ? 'http2' : 'http1',
        headers: req.headers,
        remoteAddress: socket.remoteAddress ?? '',
        remotePort: socket.remotePort ?? 0,
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

  return function handle(req: IncomingMessage, res: ServerResponse): void {
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
    const found = slot.runtime.router.match(method, req.headers.host, path, req.headers);
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
