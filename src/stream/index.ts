import type { StreamListenerConfig, SystemConfig } from '../config/system.js';
import type { Logger } from '../core/logger.js';
import type { StreamListener } from './listener.js';
import { startTcpStream } from './tcp.js';
import { startUdpStream } from './udp.js';

export type { StreamListener } from './listener.js';

/** What one `apply` did, by listener label (`tcp 0.0.0.0:5432`). */
export interface StreamChanges {
  started: string[];
  updated: string[];
  /** Rebound because a setting the server object holds (TLS) changed; open tunnels carried on. */
  restarted: string[];
  removed: string[];
  /** Listeners that could not bind, at their key path; the others were applied. */
  failed: { path: string; message: string }[];
}

interface Running {
  config: StreamListenerConfig;
  listener: StreamListener;
}

/**
 * The `stream:` listeners of system.yaml (docs/stream.md). Bound fail-fast at
 * startup; on reload (`apply`) a listener is matched by protocol, address and
 * port: its pools and SNI routes change in place while established tunnels
 * carry on, a new one starts, a removed one stops accepting and drains for
 * the shutdown grace. Connect attempts are bounded by
 * `timeouts.connection_seconds`, UDP sessions expire after
 * `timeouts.idle_seconds` without traffic (both read at startup).
 */
export class StreamListeners {
  readonly #logger: Logger;
  readonly #connectTimeoutMs: number;
  readonly #idleTimeoutMs: number;
  readonly #graceMs: number;
  #running = new Map<string, Running>();

  private constructor(system: SystemConfig, logger: Logger) {
    this.#logger = logger;
    this.#connectTimeoutMs = system.timeouts.connection_seconds * 1000;
    this.#idleTimeoutMs = system.timeouts.idle_seconds * 1000;
    this.#graceMs = system.timeouts.shutdown_timeout_seconds * 1000;
  }

  /** Binds every listener; one that cannot bind closes the others and rejects. */
  static async start(system: SystemConfig, logger: Logger): Promise<StreamListeners> {
    const set = new StreamListeners(system, logger);
    try {
      for (const [key, config] of keyed(system.stream))
        set.#running.set(key, { config, listener: await set.#bind(config) });
    } catch (err) {
      await set.close(0);
      throw err;
    }
    return set;
  }

  get list(): StreamListener[] {
    return [...this.#running.values()].map((r) => r.listener);
  }

  /** Moves the running listeners to `configs` (validated system.yaml `stream:`). */
  async apply(configs: readonly StreamListenerConfig[]): Promise<StreamChanges> {
    const changes: StreamChanges = { started: [], updated: [], restarted: [], removed: [], failed: [] };
    const next = keyed(configs);
    const draining: Promise<void>[] = [];
    for (const [key, running] of this.#running) {
      if (next.has(key)) continue;
      this.#running.delete(key);
      changes.removed.push(running.listener.label);
      draining.push(running.listener.close(this.#graceMs));
    }
    let index = 0;
    for (const [key, config] of next) {
      const at = `stream[${index++}]`;
      const running = this.#running.get(key);
      if (running !== undefined && JSON.stringify(running.config) === JSON.stringify(config)) continue;
      if (running !== undefined && running.listener.update(config)) {
        running.config = config;
        changes.updated.push(running.listener.label);
        continue;
      }
      if (running !== undefined) {
        // Stop accepting first (the port is free at once), then bind the new server; open tunnels drain.
        this.#running.delete(key);
        draining.push(running.listener.close(this.#graceMs));
      }
      try {
        const listener = await this.#bind(config);
        this.#running.set(key, { config, listener });
        (running === undefined ? changes.started : changes.restarted).push(listener.label);
      } catch (err) {
        changes.failed.push({ path: `${at}.port`, message: (err as Error).message });
      }
    }
    // Draining runs on in the background: a reload does not wait for old tunnels.
    void Promise.all(draining);
    return changes;
  }

  async close(graceMs: number): Promise<void> {
    const all = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(all.map((r) => r.listener.close(graceMs)));
  }

  #bind(config: StreamListenerConfig): Promise<StreamListener> {
    return config.protocol === 'udp'
      ? startUdpStream(config, { logger: this.#logger, idleTimeoutMs: this.#idleTimeoutMs })
      : startTcpStream(config, { logger: this.#logger, connectTimeoutMs: this.#connectTimeoutMs });
  }
}

/** Listeners keyed by protocol, address and port (port-0 listeners by their order among equals). */
function keyed(configs: readonly StreamListenerConfig[]): Map<string, StreamListenerConfig> {
  const out = new Map<string, StreamListenerConfig>();
  const seen = new Map<string, number>();
  for (const config of configs) {
    const base = `${config.protocol} ${config.bind}:${config.port}`;
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.set(`${base}#${n}`, config);
  }
  return out;
}

/** Binds every listener (fail-fast) for a process that never reloads them: a `workers` worker. */
export async function startStreamListeners(system: SystemConfig, logger: Logger): Promise<StreamListener[]> {
  return (await StreamListeners.start(system, logger)).list;
}

export async function closeStreamListeners(
  listeners: readonly StreamListener[],
  graceMs: number,
): Promise<void> {
  await Promise.all(listeners.map((l) => l.close(graceMs)));
}
