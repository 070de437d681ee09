import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import type { ThrottledLog } from './throttled-log.js';

/** `listener.max_connections: auto` never goes above this. */
export const AUTO_MAX_CONNECTIONS = 10_000;

/**
 * The soft RLIMIT_NOFILE of this process (Node raises it to the hard limit at
 * startup), or undefined where /proc is not available.
 */
export function softFdLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (match === null || match[1] === 'unlimited') return undefined;
  return Number(match[1]);
}

/**
 * Descriptors `auto` keeps out of the client budget: the process's own (about
 * 25 at start: node, the listeners, log and config files, store clients), the
 * admin listener's connections, health checks and the DNS/TLS work of the
 * upstream pools.
 */
export const FD_RESERVE = 64;

/** `auto` never goes below this, however small the descriptor limit. */
export const AUTO_MIN_CONNECTIONS = 16;

/**
 * `auto` = max(16, floor((RLIMIT_NOFILE - 64) / 2)), at most 10000: one half
 * of what the reserve leaves for client connections, the other half for the
 * upstream connection each of them (or each HTTP/2 stream, see
 * {@link ClientBudget}) can hold.
 */
export function resolveMaxConnections(value: number | 'auto', fdLimit = softFdLimit()): number {
  if (value !== 'auto') return value;
  if (fdLimit === undefined) return AUTO_MAX_CONNECTIONS;
  const auto = Math.floor((fdLimit - FD_RESERVE) / 2);
  return Math.min(AUTO_MAX_CONNECTIONS, Math.max(AUTO_MIN_CONNECTIONS, auto));
}

/**
 * What one listener's clients may hold at once (`max_connections`): each open
 * connection is a unit, and so is each in-flight HTTP/2 stream beyond the
 * first of its connection, since each can hold an upstream connection of its
 * own. An HTTP/1.1 connection thus costs at most two descriptors per unit
 * (its socket and its upstream), an HTTP/2 connection with n streams 1 + n
 * descriptors for n units.
 */
export class ClientBudget {
  readonly max: number;
  connections = 0;
  streams = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes a unit for a new connection; false when the budget is spent (the caller closes it). */
  takeConnection(): boolean {
    if (this.connections + this.streams >= this.max) return false;
    this.connections++;
    return true;
  }

  releaseConnection(): void {
    this.connections--;
  }

  /** Takes a unit for an HTTP/2 stream beyond the first of its connection; false: refuse it. */
  takeStream(): boolean {
    if (this.connections + this.streams >= this.max) return false;
    this.streams++;
    return true;
  }

  releaseStream(): void {
    this.streams--;
  }
}

/**
 * Caps the connections `server` holds open: Node closes each connection over
 * the cap as soon as it is accepted, so existing ones keep working and the
 * process keeps descriptors for everything else.
 */
export function capConnections(server: Server, max: number, log: ThrottledLog, label: string): void {
  server.maxConnections = max;
  server.on('drop', (data?: { remoteAddress?: string }) =>
    log.warn(
      'drop',
      { listener: label, max_connections: max, remote_address: data?.remoteAddress },
      `${label}: connection refused, max_connections reached`,
    ),
  );
}
