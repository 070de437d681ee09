import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from '../../core/logger.js';

/** One `servers:` entry, resolved at compile time. */
export type UpstreamSpec =
  | { name: string; kind: 'http'; url: URL; headers: Record<string, string> }
  | {
      name: string;
      kind: 'stdio';
      command: string;
      args: string[];
      env: Record<string, string>;
      cwd?: string;
      /** Why the operator does not let this command run (SWITCHYARD_MCP_COMMANDS); never spawned then. */
      refused?: string;
    };

export interface UpstreamSettings {
  logger: Logger;
  where: { policy: string; node: string };
  /** Deadline of connecting (the MCP initialize handshake included). */
  connectTimeoutMs: number;
}

/** First restart delay after a failure or an exit; doubled per failure up to {@link MAX_BACKOFF_MS}. */
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;
/** A connection that lived this long resets the backoff: the next exit restarts at once-ish. */
const STABLE_MS = 10_000;

/**
 * One upstream MCP server and the client session the gateway keeps with it. Connected on the
 * first request that needs it; a stdio server is then supervised: when its process exits it is
 * started again after a backoff (250 ms doubling to 30 s, reset after 10 s of good health) until
 * the node is retired. An HTTP server that failed is tried again on a later request once its
 * backoff has passed.
 */
export class Upstream {
  readonly name: string;
  readonly spec: UpstreamSpec;
  readonly #s: UpstreamSettings;
  #client: Client | undefined;
  #connecting: Promise<Client | undefined> | undefined;
  #failures = 0;
  #retryAt = 0;
  #connectedAt = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #started = false;
  /** Tool names (unprefixed) of the latest listing: calls to others are refused without a round trip. */
  knownTools = new Set<string>();
  lastError = '';

  constructor(spec: UpstreamSpec, settings: UpstreamSettings) {
    this.name = spec.name;
    this.spec = spec;
    this.#s = settings;
  }

  /** The child's pid (stdio), for logs. */
  #pid: number | null = null;

  /** The connected client, connecting when due; undefined while the server is down. */
  ready(): Promise<Client | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    if (this.spec.kind === 'stdio' && this.spec.refused !== undefined) {
      this.lastError = this.spec.refused;
      return Promise.resolve(undefined);
    }
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    if (this.#connecting !== undefined) return this.#connecting;
    // A supervised stdio server restarts on its own timer; a request does not hurry it.
    if (this.#started && this.spec.kind === 'stdio') return Promise.resolve(undefined);
    if (Date.now() < this.#retryAt) return Promise.resolve(undefined);
    return this.#connect();
  }

  /** Drops a session that failed under a request (HTTP): the next request connects afresh. */
  drop(err: unknown): void {
    const client = this.#client;
    if (client === undefined || this.spec.kind === 'stdio') return;
    this.lastError = messageOf(err);
    this.#client = undefined;
    void client.close().catch(() => {});
  }

  #connect(): Promise<Client | undefined> {
    this.#started = true;
    const attempt = (async (): Promise<Client | undefined> => {
      const client = new Client({ name: 'switchyard-mcp-proxy', version: '1' }, { capabilities: {} });
      const transport = this.#transport();
      try {
        await client.connect(transport, { timeout: this.#s.connectTimeoutMs });
      } catch (err) {
        void client.close().catch(() => {});
        this.#failed(err);
        return undefined;
      }
      if (this.#closed) {
        void client.close().catch(() => {});
        return undefined;
      }
      this.#pid = transport instanceof StdioClientTransport ? transport.pid : null;
      this.#client = client;
      this.#connectedAt = Date.now();
      this.lastError = '';
      client.onclose = () => this.#lost(client);
      this.#s.logger.info(
        { ...this.#s.where, server: this.name, pid: this.#pid ?? undefined },
        'mcp-proxy: upstream connected',
      );
      return client;
    })();
    this.#connecting = attempt;
    void attempt.finally(() => {
      if (this.#connecting === attempt) this.#connecting = undefined;
    });
    return attempt;
  }

  #transport(): Transport {
    const spec = this.spec;
    if (spec.kind === 'http')
      return new StreamableHTTPClientTransport(spec.url, { requestInit: { headers: spec.headers } });
    return new StdioClientTransport({
      command: spec.command,
      args: spec.args,
      env: spec.env,
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
      stderr: 'inherit',
    });
  }

  #backoff(): number {
    const ms = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.min(this.#failures, 16));
    this.#failures++;
    return ms;
  }

  #failed(err: unknown): void {
    this.lastError = messageOf(err);
    const delay = this.#backoff();
    this.#s.logger.warn(
      { ...this.#s.where, server: this.name, err: this.lastError, retry_in_ms: delay },
      'mcp-proxy: upstream unavailable',
    );
    if (this.spec.kind === 'stdio') this.#scheduleRestart(delay);
    else this.#retryAt = Date.now() + delay;
  }

  /** The session ended (a stdio process exited, or the client was closed). */
  #lost(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    if (this.#closed) return;
    if (Date.now() - this.#connectedAt >= STABLE_MS) this.#failures = 0;
    this.lastError = 'the connection closed';
    if (this.spec.kind !== 'stdio') return;
    const delay = this.#backoff();
    this.#s.logger.warn(
      { ...this.#s.where, server: this.name, pid: this.#pid ?? undefined, restart_in_ms: delay },
      'mcp-proxy: stdio server exited; restarting',
    );
    this.#scheduleRestart(delay);
  }

  #scheduleRestart(delay: number): void {
    if (this.#closed || this.#restartTimer !== undefined) return;
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#closed) void this.#connect();
    }, delay);
    this.#restartTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#restartTimer !== undefined) clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    const pending = this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) await client.close().catch(() => {});
    const late = pending === undefined ? undefined : await pending;
    if (late !== undefined) await late.close().catch(() => {});
  }
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
