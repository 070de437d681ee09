import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EtcdUnavailable } from '../config/etcd-client.js';
import { EtcdConflict } from '../config/etcd-source.js';
import { ConfigSourceReadOnly } from '../kubernetes/errors.js';
import { ConfigRejected, formatIssues } from '../config/schema-validate.js';
import { adminProblemBody } from '../core/errors.js';
import type { AdminConfig } from '../config/system.js';
import type { Gateway } from '../gateway.js';
import type { Logger } from '../core/logger.js';
import { basicAuthVerifier, basicChallenge, CHALLENGE, type AdminAccount, type AdminRole } from './auth.js';
import { maskedForViewer, VIEWER_READ_ONLY } from './viewer.js';
import { metricsAuthVerifier } from './metrics-auth.js';
import { contentTypeGuard, crossOriginGuard } from './csrf.js';
import { AdminError, adminErrorReply, send, type Reply } from './http.js';
import { LoginThrottle, tooManyFailures } from './login-throttle.js';
import { AdminRouter, type AdminRoute } from './router.js';
import { adminRoutes } from './routes.js';
import { createUiHandler } from './ui.js';
import { startListener, type RequestHandler } from '../server/listener.js';
import type { McpHandler } from './mcp/http.js';
import { audited } from './audit.js';

export interface AdminServerOptions {
  /** Directory of the built editor; defaults to ui/dist. */
  uiDir?: string;
  /** Receives the one line announcing a generated password; defaults to stdout. */
  print?: (line: string) => void;
}

export interface AdminServer {
  address: AddressInfo;
  /** `http(s)://host:port` of the listener. */
  url: string;
  /** The dispatch table (for tests that walk every route). */
  routes: readonly AdminRoute[];
  /** Set when `admin.password` was empty: the password generated for this run. */
  generatedPassword: string | undefined;
  /** Stops accepting, lets in-flight requests finish within the shutdown timeout, then cuts the rest. */
  close(): Promise<void>;
}

const UNAUTHORIZED: Reply = adminErrorReply('unauthorized', undefined, CHALLENGE);

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms, and `localhost`. */
export const isLoopback = (bind: string): boolean =>
  /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+|localhost)$/i.test(bind);
const NOT_FOUND: Reply = adminErrorReply('not_found');

/** Paths behind HTTP Basic even when no route matches them (so unknown API paths do not leak a 404). */
const isProtected = (pathname: string): boolean =>
  pathname === '/api' || pathname.startsWith('/api/') || pathname === '/metrics';

/**
 * Starts the Admin API listener (docs/admin-api.md#exposure): HTTP Basic on
 * `/api/*` and `/metrics`, open probes, the editor (or its placeholder) on
 * every other path unless `ui_enabled: false`.
 */
export async function startAdminServer(
  gateway: Gateway,
  admin: AdminConfig,
  logger: Logger,
  options: AdminServerOptions = {},
): Promise<AdminServer> {
  let password = admin.password;
  let generatedPassword: string | undefined;
  if (password === '') {
    password = generatedPassword = randomBytes(18).toString('base64url');
    const print = options.print ?? ((line: string) => process.stdout.write(line));
    print(`switchyard admin: generated password for user '${admin.username}': ${password}\n`);
  }
  const accounts: AdminAccount[] = [{ username: admin.username, password }, ...(admin.users ?? [])];
  const verify = basicAuthVerifier(accounts);
  const metricsOnly = metricsAuthVerifier(admin.metrics_auth);
  const throttle = new LoginThrottle(admin.login_throttle, logger);
  const unauthorized: Reply = { ...UNAUTHORIZED, headers: basicChallenge(admin.realm) };
  /** Who made a request, for the audit line of a write (docs/logging.md). */
  const users = new WeakMap<IncomingMessage, string>();
  /** The caller's role when the request may go on; a lock, a missing or a wrong credential answers here. */
  const authenticate = (req: IncomingMessage): Reply | AdminRole => {
    const client = req.socket.remoteAddress ?? 'unknown';
    const locked = throttle.retryAfter(client);
    if (locked !== undefined) return tooManyFailures(locked);
    const outcome = verify(req.headers.authorization);
    if (outcome.kind === 'ok') {
      throttle.succeeded(client);
      users.set(req, outcome.username);
      return outcome.role;
    }
    if (outcome.kind === 'failed') {
      const lock = throttle.failed(client, outcome.username, outcome.scheme);
      if (lock !== undefined) return tooManyFailures(lock);
    }
    return unauthorized;
  };
  const crossOrigin = crossOriginGuard(admin.tls === undefined ? 'http' : 'https', admin.allowed_origins);
  const routes = adminRoutes(gateway);
  const router = new AdminRouter(routes);
  const ui = admin.ui_enabled ? createUiHandler(options.uiDir) : undefined;
  const mcpPath = admin.mcp?.path ?? '/mcp';

  // Imported only when configured: the MCP SDK (and zod) cost ~25 MiB (docs/deployment.md).
  const mcpConfig = admin.mcp;
  const mcp: Promise<McpHandler | undefined> | undefined =
    mcpConfig === undefined
      ? undefined
      : import('./mcp/http.js').then((m) =>
          m.createMcpHandler({ gateway, config: mcpConfig, logger, router, throttle }),
        );

  /** The reply to send, or undefined when the MCP transport answered by itself. */
  const dispatch = async (req: IncomingMessage, res: ServerResponse): Promise<Reply | undefined> => {
    const url = new URL(req.url ?? '/', 'http://admin.invalid');
    const pathname = url.pathname;
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    // MCP has its own bearer tokens (never Basic); disabled answers 404 without a Basic challenge.
    if (pathname === mcpPath) {
      const handler = await mcp;
      if (handler === undefined) return NOT_FOUND;
      await handler(req, res);
      return undefined;
    }
    const found = router.match(method, pathname);
    const needsAuth =
      found.kind === 'none' ? isProtected(pathname) : found.kind === 'found' ? found.route.auth : found.auth;
    // CSRF before credentials: a forged write neither runs nor counts as a failed login.
    const refused = crossOrigin(req, method);
    if (refused !== undefined) return refused;
    let role: AdminRole = 'admin';
    if (needsAuth) {
      // admin.metrics_auth opens GET /metrics and nothing else (docs/metrics.md#credentials).
      const scrape = method === 'GET' && pathname === '/metrics' && metricsOnly(req);
      const outcome = scrape ? 'viewer' : authenticate(req);
      if (typeof outcome !== 'string') return outcome;
      role = outcome;
    }
    const readOnly = method === 'GET' || (found.kind === 'found' && found.route.readOnly === true);
    if (role === 'viewer' && !readOnly) return VIEWER_READ_ONLY;
    const untyped = contentTypeGuard(req, method);
    if (untyped !== undefined) return untyped;
    if (found.kind === 'found') {
      const call = () => found.route.handler({ req, params: found.params, query: url.searchParams });
      // Writes: the author of what they apply (history) and one audit entry (docs/config-as-code.md#audit-log).
      const user = users.get(req) ?? null;
      const reply = readOnly
        ? await call()
        : await audited(gateway, { user, method, resource: pathname }, call);
      if (!readOnly && reply.status < 400) {
        logger.info(
          { user: users.get(req) ?? '(none)', method, resource: pathname, status: reply.status },
          'admin write',
        );
      }
      return role === 'viewer' ? maskedForViewer(reply) : reply;
    }
    if (found.kind === 'method') {
      return adminErrorReply('method_not_allowed', undefined, { allow: found.allowed.join(', ') });
    }
    if (isProtected(pathname) || ui === undefined || method !== 'GET') return NOT_FOUND;
    return ui(pathname);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    dispatch(req, res).then(
      (reply) => {
        if (reply === undefined) return;
        send(res, reply);
        if (reply.status >= 400) req.resume();
      },
      (err: unknown) => {
        req.resume();
        send(res, errorReply(err, logger));
      },
    );
  };

  const listener = await startListener(
    {
      label: 'admin API',
      bind: admin.bind,
      port: admin.port,
      tls: admin.tls,
      http2: gateway.system.http2.enabled,
      http2Limits: gateway.system.http2,
      maxConnections: admin.max_connections,
      timeouts: gateway.system.timeouts,
      logger,
      // `admin.tls.acme` (docs/acme.md#the-admin-listener).
      ...(gateway.acme === undefined ? {} : { managedCertificates: gateway.acme.forAdmin() }),
    },
    handle as RequestHandler,
  );
  const address = listener.address;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const scheme = listener.scheme;
  if (!isLoopback(admin.bind) && admin.tls === undefined) {
    logger.warn(
      { bind: admin.bind, port: address.port },
      'the admin listener accepts connections from other hosts over plain HTTP: Basic credentials travel in clear text (set admin.tls, or admin.bind: 127.0.0.1)',
    );
  }

  return {
    address,
    url: `${scheme}://${host}:${address.port}`,
    routes,
    generatedPassword,
    close: () => listener.close(gateway.system.timeouts.shutdown_timeout_seconds * 1000),
  };
}

function errorReply(err: unknown, logger: Logger): Reply {
  if (err instanceof AdminError) return { status: err.status, body: err.body, headers: err.headers };
  if (err instanceof ConfigRejected) {
    return { status: 400, body: adminProblemBody(formatIssues(err.issues), err.issues) };
  }
  // F-4: another gateway (or etcdctl) kept changing a resource this write touches: nothing applied.
  if (err instanceof EtcdConflict) {
    return adminErrorReply('conflict', { message: err.message, resources: err.resources });
  }
  // config.source kubernetes: the cluster holds the configuration (docs/kubernetes.md).
  if (err instanceof ConfigSourceReadOnly) {
    return adminErrorReply('read_only_source', { message: err.message, source: err.source });
  }
  // config.source etcd: the change was valid but could not be stored, so it was not applied.
  if (err instanceof EtcdUnavailable) {
    return adminErrorReply('config_store_unavailable', { message: err.message });
  }
  logger.error({ err }, 'admin request failed');
  return adminErrorReply('internal_error', { message: (err as Error).message ?? String(err) });
}
