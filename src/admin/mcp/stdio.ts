import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export const TOKEN_ENV = 'SWITCHYARD_MCP_TOKEN';
export const URL_ENV = 'SWITCHYARD_MCP_URL';
export const ADMIN_URL_ENV = 'SWITCHYARD_ADMIN_URL';
const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9090';

export const MCP_USAGE = `Usage:
  switchyard mcp --stdio [--url <MCP endpoint URL>]

Serves MCP over stdin/stdout for agents that start a local process, and
forwards every message to a running gateway's MCP endpoint, so the tools,
scopes and configuration are the gateway's own (docs/mcp.md#stdio).
  ${TOKEN_ENV}   the MCP token (required; its scope applies)
  ${URL_ENV}     the endpoint (default \${${ADMIN_URL_ENV}:-${DEFAULT_ADMIN_URL}}/mcp)`;

export interface StdioBridgeOptions {
  /** The gateway's MCP endpoint, `http(s)://<admin>/mcp`. */
  url: URL;
  token: string;
  stdin?: Readable;
  stdout?: Writable;
  /** Diagnostics; never stdout, which carries the protocol. */
  log(line: string): void;
}

/**
 * Relays JSON-RPC between stdio and the gateway's Streamable HTTP endpoint.
 * The gateway authenticates the token and applies its scope on every
 * message, exactly as for a remote agent: a read token stays read-only here.
 * A message the gateway cannot take (unreachable, 401) is answered with a
 * JSON-RPC error naming the endpoint, so the agent sees why. Resolves when
 * stdin ends.
 */
export async function runStdioBridge(options: StdioBridgeOptions): Promise<void> {
  const { url, token } = options;
  const log = (line: string): void => options.log(line);
  const stdin = options.stdin ?? process.stdin;
  const local = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  const remote = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  remote.onmessage = (message) => {
    local.send(message).catch((err: unknown) => log(`cannot write to stdout: ${String(err)}`));
  };
  remote.onerror = (err) => log(`gateway MCP endpoint ${url.href}: ${err.message}`);
  local.onerror = (err) => log(`stdin: ${err.message}`);
  local.onmessage = (message: JSONRPCMessage) => {
    remote.send(message).catch((err: unknown) => {
      if (!isJSONRPCRequest(message)) return;
      const reason = err instanceof Error ? err.message : String(err);
      local
        .send({
          jsonrpc: '2.0',
          id: message.id,
          error: { code: ErrorCode.InternalError, message: `gateway MCP endpoint ${url.href}: ${reason}` },
        })
        .catch(() => undefined);
    });
  };
  const ended = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
  });
  await remote.start();
  await local.start();
  await ended;
  await local.close();
  await remote.close();
}

/** `switchyard mcp --stdio`; returns the exit code. */
export async function runMcpCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values: { stdio: boolean; url?: string; help: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        stdio: { type: 'boolean', default: false },
        url: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${MCP_USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${MCP_USAGE}\n`);
    return 0;
  }
  if (!values.stdio) {
    process.stderr.write(`switchyard mcp: --stdio is the only local transport\n\n${MCP_USAGE}\n`);
    return 2;
  }
  const token = env[TOKEN_ENV] ?? '';
  if (token === '') {
    process.stderr.write(`switchyard mcp: set ${TOKEN_ENV} to an admin.mcp.tokens[] token\n`);
    return 2;
  }
  const base = (env[ADMIN_URL_ENV] ?? DEFAULT_ADMIN_URL).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(values.url ?? env[URL_ENV] ?? `${base}/mcp`);
  } catch {
    process.stderr.write(`switchyard mcp: not a URL: ${values.url ?? env[URL_ENV] ?? base}\n`);
    return 2;
  }
  await runStdioBridge({ url, token, log: (line) => process.stderr.write(`switchyard mcp: ${line}\n`) });
  return 0;
}
