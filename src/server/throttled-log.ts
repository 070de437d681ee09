import type { Logger } from '../core/logger.js';

/**
 * Warnings caused by a client's behaviour (dropped connections, rapid reset)
 * are logged at most once per interval per kind, with the number suppressed
 * since the last line: an attacker must not be able to fill the disk.
 */
export class ThrottledLog {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(logger: Logger, intervalMs = 10_000) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = Date.now();
    const last = this.#last.get(kind);
    if (last !== undefined && now - last.at < this.#intervalMs) {
      last.suppressed++;
      return;
    }
    const suppressed = last?.suppressed ?? 0;
    this.#last.set(kind, { at: now, suppressed: 0 });
    this.#logger.warn(suppressed > 0 ? { ...fields, suppressed } : fields, message);
  }
}
