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
 * `auto` leaves half of the descriptors to upstream connections, the admin
 * listener, stores and files: one client connection usually costs one
 * upstream connection too.
 */
export function resolveMaxConnections(value: number | 'auto', fdLimit = softFdLimit()): number {
  if (value !== 'auto') return value;
  if (fdLimit === undefined) return AUTO_MAX_CONNECTIONS;
  return Math.max(1, Math.min(AUTO_MAX_CONNECTIONS, Math.floor(fdLimit / 2)));
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
