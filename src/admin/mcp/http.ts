import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { adminErrorReply, send } from '../http.js';
import { tooManyFailures, type LoginThrottle } from '../login-throttle.js';
import type { AdminRouter } from '../router.js';
import type { AdminConfig } from '../../config/system.js';
import type { Gateway } from '../../gateway.js';
import type { Logger } from '../../core/logger.js';
import { bearerVerifier, originAllowed } from './auth.js';
import { createMcpServer } from './server.js';
import type { ToolContext } from './tools/index.js';

export type McpHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface McpHandlerOptions {
  gateway: Gateway;
  config: NonNullable<AdminConfig['mcp']>;
  logger: Logger;
  /** The Admin API's dispatch table: tools run its operations in process. */
  router: AdminRouter;
  /** The admin listener's failed-login throttle: wrong bearer tokens count against the same address. */
  throttle?: LoginThrottle;
}

const CHALLENGE = { 'www-authenticate': 'Bearer realm="switchyard-mcp"' };
const UNAUTHORIZED = adminErrorReply('unauthorized', undefined, CHALLENGE);

/**
 * The MCP endpoint (docs/mcp.md) as a handler for the admin listener, or
 * undefined when `admin.mcp.enabled` is off (the path then answers 404).
 * Every request is checked on its own (Origin, then bearer token) and served
 * by a fresh server and stateless Streamable HTTP transport, so a token's
 * scope applies to exactly the request that presented it.
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler | undefined {
  const { gateway, config, logger, router, throttle } = options;
  if (!config.enabled) return undefined;
  const verify = bearerVerifier(config.tokens);

  return async (req, res) => {
    const socket = req.socket as Partial<TLSSocket>;
    const listener = {
      scheme: socket.encrypted === true ? ('https' as const) : ('http' as const),
      bind: gateway.system.admin?.bind ?? '127.0.0.1',
      port: req.socket.localPort ?? 0,
    };
    if (!originAllowed(req.headers, listener, config.allowed_origins)) {
      logger.warn({ origin: req.headers.origin }, 'mcp request refused: origin not allowed');
      send(res, adminErrorReply('origin_not_allowed'));
      return;
    }
    const client = req.socket.remoteAddress ?? 'unknown';
    const locked = throttle?.retryAfter(client);
    if (locked !== undefined) {
      send(res, tooManyFailures(locked));
      return;
    }
    const principal = verify(req.headers.authorization);
    if (principal === undefined) {
      // Only a presented token is a guess; a request without one is a client that must authenticate.
      const lock =
        req.headers.authorization === undefined ? undefined : throttle?.failed(client, 'mcp-bearer');
      send(res, lock === undefined ? UNAUTHORIZED : tooManyFailures(lock));
      return;
    }
    throttle?.succeeded(client);
    // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
    if (req.method !== 'POST') {
      send(res, adminErrorReply('method_not_allowed', undefined, { allow: 'POST' }));
      return;
    }
    const ctx: ToolContext = {
      gateway,
      principal,
      logger,
      redaction: gateway.debug.capture.redaction,
      admin: async (method, path) => {
        const found = router.match(method, path);
        if (found.kind !== 'found') throw new Error(`no admin operation ${method} ${path}`);
        return found.route.handler({ req, params: found.params, query: new URLSearchParams() });
      },
    };
    const server = createMcpServer(ctx);
    // Without a sessionIdGenerator the transport is stateless: no Mcp-Session-Id, nothing kept.
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
}
