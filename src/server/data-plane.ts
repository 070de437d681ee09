import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { Context, notifyResponseWatchers } from '../core/context.js';
import {
  badRequestBody,
  NO_ROUTE_BODY,
  payloadTooLargeBody,
  PROXY_LOOP_BODY,
  UNHANDLED_ERROR_BODY,
  UNSUPPORTED_UPGRADE_BODY,
} from '../core/errors.js';
import { timesSeen } from '../outbound/via.js';
import { runPolicy, type RunHooks } from '../engine/run.js';
import type { RouteTarget } from '../engine/compile.js';
import {
  announcedLength,
  BodyTooLarge,
  hasBody,
  readBody,
  releaseRequestStream,
  streamBody,
} from './request-body.js';
import { attachRequestStream, type RequestBodyStream } from '../outbound/request-stream.js';
import { normaliseTarget, PathRejected } from './request-path.js';
import { clientCertIdentity } from './client-cert.js';
import { peerOf } from './listener.js';
import { answerUpgrade, attachUpgrade, isRelayed } from '../outbound/websocket-relay.js';
import { isWebSocketUpgrade, serveWithoutUpgrade } from './ignored-upgrade.js';
import type { Duplex } from 'node:stream';
import { sendJson, sendResponse, watchClientGone, type Reply } from './respond.js';
import { isGrpcRequest, refuseGrpc, sendGrpcResponse } from './grpc-error.js';
import { attachGrpcCall } from '../outbound/grpc/client-call.js';
import { attachGrpcWebReply, isGrpcWebRequest, sendGrpcWebResponse } from './grpc-web.js';
import type { RuntimeSlot } from './runtime-slot.js';
import type { DebugTap } from '../debug/tap.js';
import type { TraceRecorder } from '../core/graph-types.js';
import type { ServerRequest } from './server-request.js';
import { LeanResponse } from './lean/lean-response.js';
import {
  closeAfterRefusal,
  DEFAULT_RULES,
  hasUnderscoreName,
  hostValueProblem,
  isClosing,
  pathEscapeProblem,
  refusal,
  withoutUnderscoreNames,
  type RequestRules,
} from './request-checks.js';

export type { ServerRequest } from './server-request.js';
export type ServerReply = ServerResponse | Http2ServerResponse | LeanResponse;

export interface DataPlaneOptions {
  current(): RuntimeSlot;
  maxBodyBytes: number;
  /** `listener.max_hops`: a request whose Via already names this gateway this often is answered 508. */
  maxHops: number;
  /** `listener.headers_with_underscores` and `listener.allow_trace` (./request-checks.ts); defaults when absent. */
  rules?: RequestRules;
  hooks: RunHooks;
  /** Called once per finished request: metrics and the access log (src/observability/access-log.ts). */
  onFinished?: (
    route: string,
    status: number,
    startedAt: number,
    nodeErrors?: number,
    req?: ServerRequest,
    ctx?: Context,
  ) => void;
  /** Present only with `debug.enabled`: traced requests then take the recording path. */
  debug?: DebugTap;
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

/** The request target as routed: an origin-form path, plus the authority of an absolute-form target. */
interface RequestTarget {
  url: string;
  /** Set for absolute-form (`GET http://h/p`): RFC 9112 §3.2.2 has it win over `Host`. */
  authority: string | undefined;
}

/**
 * Reads the request target: origin-form (`/p?q`) or absolute-form, which is
 * reduced to its path and authority; then normalises the path
 * ({@link normaliseTarget}). Returns the reason when the target is refused.
 */
function readTarget(raw: string): RequestTarget | string {
  let url = raw;
  let authority: string | undefined;
  if (!raw.startsWith('/')) {
    const scheme = /^https?:\/\//i.exec(raw);
    if (scheme === null) return 'request target must be a path';
    const start = scheme[0].length;
    let end = start;
    while (end < raw.length && !'/?#'.includes(raw.charAt(end))) end++;
    authority = raw.slice(start, end);
    if (authority === '' || authority.includes('@'))
      return 'absolute-form target must name a host and no user info';
    url = raw.charAt(end) === '/' ? raw.slice(end) : '/' + raw.slice(end);
  }
  try {
    return { url: normaliseTarget(url), authority };
  } catch (err) {
    if (err instanceof PathRejected) return err.message;
    throw err;
  }
}

/** {@link readTarget}, and `%00` or a malformed escape in the path is refused too (nginx answers them 400). */
function readCheckedTarget(raw: string): RequestTarget | string {
  const target = readTarget(raw);
  if (typeof target === 'string') return target;
  return pathEscapeProblem(target.url) ?? target;
}

/**
 * RFC 9112 §3.2: more than one Host, or a Host whose value is not a host
 * (empty, a space, a slash…: ./request-checks.ts), is a 400; so is an HTTP/2
 * `host` that names another authority than `:authority` (RFC 9113 §8.3.1).
 */
function hostProblem(req: ServerRequest): string | undefined {
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name?.length === 4 && name.toLowerCase() === 'host') count++;
  }
  if (count > 1) return 'more than one Host header';
  const authority = req.headers[':authority'];
  const host = req.headers.host;
  if (host !== undefined) {
    const bad = hostValueProblem(host);
    if (bad !== undefined) return bad;
  }
  if (
    count === 1 &&
    typeof authority === 'string' &&
    typeof host === 'string' &&
    authority.toLowerCase() !== host.toLowerCase()
  )
    return 'Host and :authority disagree';
  return undefined;
}

interface Prepared {
  slot: RuntimeSlot;
  target: RouteTarget;
  /** Normalised path plus query: what the policy and the upstream see. */
  url: string;
  /** The authority of an absolute-form target, which replaces `Host`. */
  authority: string | undefined;
  /** The request's headers without underscore names (`listener.headers_with_underscores: drop`), when it had some. */
  headers: ServerRequest['headers'] | undefined;
}

/** What every handler reads: the options, resolved once when the handlers are made. */
interface Plane {
  readonly options: DataPlaneOptions;
  readonly hooks: RunHooks;
  readonly maxBodyBytes: number;
  readonly maxHops: number;
  readonly rules: RequestRules;
  readonly onFinished: DataPlaneOptions['onFinished'];
  readonly debug: DebugTap | undefined;
  /** {@link runUntraced}, or {@link runMaybeTraced} with debug on: chosen once. */
  readonly run: RunPolicy;
}

/** Runs the policy, then `answer` (sync when every node was sync); `fail` on an unexpected throw. */
type RunPolicy = (
  plane: Plane,
  ctx: Context,
  target: RouteTarget,
  answer: () => void,
  fail: (err: unknown) => void,
) => void;

/** Answers a request refused before the graph runs. */
type Reject = (status: number, body: unknown, headers?: Record<string, string>) => void;

/** The data-plane handlers: route, buffer the body, run the policy graph, answer (or relay a WebSocket). */
export function createDataPlaneHandler(options: DataPlaneOptions) {
  const plane: Plane = {
    options,
    hooks: options.hooks,
    maxBodyBytes: options.maxBodyBytes,
    maxHops: options.maxHops,
    rules: options.rules ?? DEFAULT_RULES,
    onFinished: options.onFinished,
    debug: options.debug,
    // With debug off the request path has no debug check at all.
    run: options.debug === undefined ? runUntraced : runMaybeTraced,
  };
  return {
    handle: (req: ServerRequest, reply: ServerReply): void => handle(plane, req, reply),
    handleUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer): void =>
      handleUpgrade(plane, req, socket, head),
  };
}

function buildContext(
  req: ServerRequest,
  { target, url, authority, headers: kept }: Prepared,
  body: Buffer | null,
  websocket: boolean,
): Context {
  const socket = req.socket;
  const tls = (socket as TLSSocket).encrypted === true;
  const h2 = req.httpVersionMajor === 2;
  const peer = peerOf(req);
  const received = kept ?? req.headers;
  let headers = h2 ? http2Headers(received) : received;
  if (authority !== undefined) headers = { ...headers, host: authority };
  const ctx = new Context({
    method: websocket ? 'GET' : (req.method ?? 'GET'),
    url,
    host: headers.host ?? '',
    scheme: tls ? 'https' : 'http',
    protocol: websocket ? 'websocket' : h2 ? 'http2' : 'http1',
    headers,
    remoteAddress: peer.address,
    remotePort: peer.port,
    body,
  });
  ctx.route = target.route;
  ctx.policy = target.policy.name;
  if (tls) exposeClientCert(ctx, socket);
  return ctx;
}

function runUntraced(
  plane: Plane,
  ctx: Context,
  target: RouteTarget,
  answer: () => void,
  fail: (err: unknown) => void,
  trace?: TraceRecorder,
): void {
  let result: void | Promise<void>;
  try {
    result = runPolicy(target.policy, ctx, plane.hooks, trace);
  } catch (err) {
    fail(err);
    return;
  }
  if (result === undefined) answer();
  else result.then(answer, fail);
}

/** With debug on: a request the tap traces runs with a recorder, ended with the run. */
function runMaybeTraced(
  plane: Plane,
  ctx: Context,
  target: RouteTarget,
  answer: () => void,
  fail: (err: unknown) => void,
): void {
  const trace = plane.debug?.begin(ctx, target.route, target.policy);
  if (trace === undefined) {
    runUntraced(plane, ctx, target, answer, fail);
    return;
  }
  const answerTraced = () => {
    trace.end();
    answer();
  };
  const failTraced = (err: unknown) => {
    trace.end(err);
    fail(err);
  };
  runUntraced(plane, ctx, target, answerTraced, failTraced, trace);
}

/** Hands the client side a node takes over to the context (./transport.ts in src/core). */
function attachTransport(
  ctx: Context,
  req: ServerRequest,
  res: Reply,
  websocket: boolean,
  grpc: boolean,
  grpcWeb: boolean,
  stream: RequestBodyStream | undefined,
): void {
  if (stream !== undefined) attachRequestStream(ctx, stream);
  if (websocket) attachUpgrade(ctx, { kind: 'http2', stream: (req as Http2ServerRequest).stream });
  if (grpc) attachGrpcCall(ctx, { req: req as Http2ServerRequest, res: res as Http2ServerResponse });
  // gRPC-Web (docs/plugins/grpc-web.md): the grpc-web node streams the answer into the reply itself.
  if (grpcWeb) attachGrpcWebReply(ctx, res);
}

function execute(
  plane: Plane,
  req: ServerRequest,
  res: Reply,
  prepared: Prepared,
  body: Buffer | null,
  startedAt: number,
  stream?: RequestBodyStream,
): void {
  const { slot, target } = prepared;
  const websocket = isExtendedConnect(req);
  const ctx = buildContext(req, prepared, body, websocket);
  if (res instanceof LeanResponse) res.clientGone = ctx.clientGone;
  else watchClientGone(res, ctx.clientGone);
  const grpc = isGrpcRequest(req);
  const grpcWeb = !grpc && isGrpcWebRequest(req);
  if (stream !== undefined || websocket || grpc || grpcWeb)
    attachTransport(ctx, req, res, websocket, grpc, grpcWeb, stream);
  const finish = () => {
    slot.release();
    plane.onFinished?.(target.route, res.statusCode, startedAt, ctx.errors.length, req, ctx);
  };
  plane.run(
    plane,
    ctx,
    target,
    () => {
      if (stream !== undefined) releaseRequestStream(ctx);
      if (ctx.responseWatchers !== undefined) notifyResponseWatchers(ctx);
      if (isRelayed(ctx)) finish();
      else if (grpc) sendGrpcResponse(res, ctx, finish);
      else if (grpcWeb) sendGrpcWebResponse(res, ctx, finish);
      else sendResponse(res, ctx, finish);
    },
    (err) => {
      plane.hooks.logger.error({ err, route: target.route }, 'policy run failed unexpectedly');
      ctx.response.discardStream();
      if (stream !== undefined) releaseRequestStream(ctx);
      if (!res.headersSent) sendJson(res, 500, UNHANDLED_ERROR_BODY);
      else res.destroy();
      finish();
    },
  );
}

/** Answers a refused request: the refusal's status, body and headers, then the finish callback. */
function refuseEarly(
  plane: Plane,
  req: ServerRequest,
  startedAt: number,
  reject: Reject,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): undefined {
  reject(status, body, headers);
  plane.onFinished?.('', status, startedAt, undefined, req);
  return undefined;
}

/** Routes a request; answers 508/400/404 itself and returns undefined when the graph must not run. */
function prepare(
  plane: Plane,
  req: ServerRequest,
  method: string,
  startedAt: number,
  reject: Reject,
): Prepared | undefined {
  const { rules, maxHops } = plane;
  const via = req.headers.via;
  if (via !== undefined && timesSeen(via, maxHops) >= maxHops)
    return refuseEarly(plane, req, startedAt, reject, 508, PROXY_LOOP_BODY);
  // A pipelined request behind an answer that closes the connection (node:http dispatches it).
  if (isClosing(req)) return undefined;
  const refused = refusal(req, rules);
  // HTTP/1.1 answers to a malformed request close the connection, as nginx's do.
  const close = 'stream' in req ? undefined : CLOSE;
  if (refused !== undefined) {
    const { status, error, message } = refused;
    if (close !== undefined) closeAfterRefusal(req);
    return refuseEarly(plane, req, startedAt, reject, status, { error, message }, close);
  }
  const problem = hostProblem(req);
  const target = problem ?? readCheckedTarget(req.url ?? '');
  if (typeof target === 'string') {
    if (close !== undefined) closeAfterRefusal(req);
    return refuseEarly(plane, req, startedAt, reject, 400, badRequestBody(target), close);
  }
  const { url, authority } = target;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const headers =
    rules.headersWithUnderscores === 'drop' && hasUnderscoreName(req.rawHeaders)
      ? withoutUnderscoreNames(req.headers)
      : undefined;
  const slot = plane.options.current();
  const found = slot.runtime.router.match(
    method,
    authority ?? req.headers.host ?? (req.headers[':authority'] as string | undefined),
    path,
    headers ?? req.headers,
  );
  if (found === undefined) {
    // The tap reads headers, socket and target: fields a LeanRequest has too.
    const extra = plane.debug?.unrouted(req as IncomingMessage, method, url);
    return refuseEarly(plane, req, startedAt, reject, 404, NO_ROUTE_BODY, extra);
  }
  slot.acquire();
  return { slot, target: found.target, url, authority, headers };
}

function handle(plane: Plane, req: ServerRequest, reply: ServerReply): void {
  const res: Reply = reply;
  const startedAt = performance.now();
  const method = isExtendedConnect(req) ? 'GET' : (req.method ?? 'GET');
  const prepared = prepare(plane, req, method, startedAt, (status, body, headers) => {
    if (isGrpcRequest(req)) refuseGrpc(res, status, body);
    else sendJson(res, status, body, headers);
    req.resume();
  });
  if (prepared === undefined) return;
  // An RFC 8441 CONNECT stream stays open for the tunnel: it has no body to buffer.
  // A gRPC call's messages are relayed as they stream (docs/grpc.md): never buffered.
  if (isExtendedConnect(req) || !hasBody(req) || isGrpcRequest(req)) {
    execute(plane, req, res, prepared, null, startedAt);
    return;
  }
  const { maxBodyBytes, debug } = plane;
  const refuse = (err: unknown) => refuseBody(plane, req, res, prepared, startedAt, err);
  // docs/routing.md#request-bodies: streamed unless a node of the policy reads the body.
  if (
    prepared.target.policy.streamsRequestBody === true &&
    debug?.traces(req.headers, peerOf(req).address) !== true
  ) {
    if ((announcedLength(req) ?? 0) > maxBodyBytes) refuse(new BodyTooLarge(maxBodyBytes));
    else execute(plane, req, res, prepared, null, startedAt, streamBody(req, maxBodyBytes));
    return;
  }
  readBody(req, maxBodyBytes).then((body) => execute(plane, req, res, prepared, body, startedAt), refuse);
}

/** A body that could not be read: 413 past the limit, otherwise the connection is dropped. */
function refuseBody(
  plane: Plane,
  req: ServerRequest,
  res: Reply,
  prepared: Prepared,
  startedAt: number,
  err: unknown,
): void {
  prepared.slot.release();
  if (err instanceof BodyTooLarge) {
    // HTTP/1.1 cannot skip the unread rest of the body; HTTP/2 just ends the stream.
    const extra = req.httpVersionMajor === 2 ? undefined : { connection: 'close' };
    sendJson(res, 413, payloadTooLargeBody(err.message), extra);
    plane.onFinished?.(prepared.target.route, 413, startedAt, undefined, req);
  } else {
    res.destroy();
  }
}

/** A JSON answer on an upgrade socket (no HTTP response object there). */
function answerUpgradeJson(
  socket: Duplex,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  answerUpgrade(
    socket,
    status,
    { 'content-type': 'application/json', ...headers },
    Buffer.from(JSON.stringify(body)),
  );
}

/**
 * HTTP/1.1 `Upgrade: websocket`: the graph runs as for any request; the upstream node relays the
 * tunnel. Any other upgrade (`h2c`, `TLS/1.0`…) is ignored and the request served as plain HTTP/1.1.
 */
function handleUpgrade(plane: Plane, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const startedAt = performance.now();
  if (!isWebSocketUpgrade(req)) {
    if (serveWithoutUpgrade(req, socket, head)) return;
    socket.on('error', () => socket.destroy());
    answerUpgradeJson(socket, 400, UNSUPPORTED_UPGRADE_BODY);
    return;
  }
  socket.on('error', () => socket.destroy());
  if (isClosing(req)) {
    socket.destroy();
    return;
  }
  const prepared = prepare(plane, req, 'GET', startedAt, (status, body, headers) =>
    answerUpgradeJson(socket, status, body, headers),
  );
  if (prepared === undefined) return;
  const ctx = buildContext(req, prepared, null, true);
  socket.once('close', () => ctx.clientGone.fire());
  attachUpgrade(ctx, { kind: 'http1', socket, head });
  runUpgrade(plane, req, socket, prepared, ctx, startedAt);
}

/** Runs the policy of a WebSocket upgrade: relayed (101), or the policy's answer on the socket. */
function runUpgrade(
  plane: Plane,
  req: IncomingMessage,
  socket: Duplex,
  prepared: Prepared,
  ctx: Context,
  startedAt: number,
): void {
  const finish = (status: number) => {
    prepared.slot.release();
    plane.onFinished?.(prepared.target.route, status, startedAt, ctx.errors.length, req, ctx);
  };
  plane.run(
    plane,
    ctx,
    prepared.target,
    () => {
      if (isRelayed(ctx)) {
        finish(101);
        return;
      }
      const r = ctx.response;
      r.discardStream();
      const status = r.status === 0 ? 200 : r.status;
      answerUpgrade(socket, status, r.headers, r.body);
      finish(status);
    },
    (err) => {
      plane.hooks.logger.error({ err, route: prepared.target.route }, 'policy run failed unexpectedly');
      answerUpgradeJson(socket, 500, UNHANDLED_ERROR_BODY);
      finish(500);
    },
  );
}

const CLOSE = { connection: 'close' };

/** RFC 8441: an HTTP/2 CONNECT with `:protocol: websocket`. */
function isExtendedConnect(req: ServerRequest): boolean {
  return req.method === 'CONNECT' && req.headers[':protocol'] === 'websocket';
}
