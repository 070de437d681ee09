import { closeSync, openSync } from 'node:fs';
import { pino } from 'pino';
import type { SystemConfig } from '../config/system.js';
import { createRedaction } from '../debug/redaction.js';
import type { Logger } from '../core/logger.js';
import type { RequestFinished } from './metrics.js';
import type { AccessLogConfig } from '../config/access-log.js';
import { lineFormatter, type LineFormatter } from './access-log-format.js';

export type { AccessLogConfig } from '../config/access-log.js';

type Destination = ReturnType<typeof pino.destination>;

/**
 * Opens `path` for appending once, synchronously, so a bad path fails the
 * start naming the key. The directory must exist, as with nginx.
 */
function checkWritable(path: string): void {
  try {
    closeSync(openSync(path, 'a'));
  } catch (err) {
    throw new Error(`access_log.output: cannot open '${path}' for appending: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * The gateway-wide access log: one line per finished request, formatted on
 * the request path and handed to an asynchronous sonic-boom destination, so
 * the event loop never waits for the disk. A file is reopened on SIGUSR1
 * (after logrotate renamed it).
 */
export class AccessLog {
  readonly #dest: Destination;
  readonly #format: LineFormatter;
  readonly #logger: Logger;
  readonly #file: string | undefined;
  #dropped = 0;
  #lastDropWarning = 0;
  #closed = false;

  constructor(config: AccessLogConfig, system: SystemConfig, logger: Logger) {
    this.#logger = logger;
    this.#format = lineFormatter(config.format, createRedaction(system.debug), config.request_id_header);
    const common = { sync: false, maxLength: config.max_buffer_bytes } as const;
    if (config.output === 'stdout') {
      this.#file = undefined;
      this.#dest = pino.destination({ ...common, fd: 1 });
    } else {
      checkWritable(config.output);
      this.#file = config.output;
      this.#dest = pino.destination({ ...common, dest: config.output, append: true });
    }
    this.#dest.on('error', (err: Error) => {
      this.#logger.warn({ err, output: config.output }, 'access log write failed');
    });
    this.#dest.on('drop', () => this.#noteDrop());
  }

  /** The number of lines dropped because the destination could not keep up. */
  get dropped(): number {
    return this.#dropped;
  }

  /** The file written, or undefined for stdout. */
  get file(): string | undefined {
    return this.#file;
  }

  readonly write = (...[route, status, startedAt, , req, ctx]: Parameters<RequestFinished>): void => {
    if (req === undefined || this.#closed) return;
    // Lines of one event-loop turn go to the destination as one write.
    if (this.#pending === '') setImmediate(this.#flush);
    this.#pending += this.#format({ route, status, startedAt, req, ctx });
  };

  #pending = '';

  readonly #flush = (): void => {
    const chunk = this.#pending;
    this.#pending = '';
    if (chunk !== '') this.#dest.write(chunk);
  };

  /** Reopens the file by its path (logrotate moved the old one away); a no-op for stdout. */
  reopen(): void {
    if (this.#file === undefined || this.#closed) return;
    try {
      this.#dest.reopen();
      this.#logger.info({ output: this.#file }, 'access log reopened');
    } catch (err) {
      this.#logger.warn({ err, output: this.#file }, 'access log reopen failed');
    }
  }

  /** Writes what is buffered, then closes the file. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#flush();
    const dest = this.#dest;
    return new Promise((resolve) => {
      dest.once('close', () => resolve());
      dest.once('error', () => resolve());
      dest.end();
    });
  }

  #noteDrop(): void {
    this.#dropped++;
    const now = Date.now();
    if (now - this.#lastDropWarning < 10_000) return;
    this.#lastDropWarning = now;
    this.#logger.warn(
      { output: this.#file ?? 'stdout', dropped: this.#dropped },
      'access log destination is not keeping up; lines dropped (access_log.max_buffer_bytes)',
    );
  }
}

/**
 * The data plane's completion call: the metrics hook alone when the access log
 * is off (no extra branch per request), else metrics then one log line.
 */
export function requestFinishedHook(metrics: RequestFinished, log: AccessLog | undefined): RequestFinished {
  if (log === undefined) return metrics;
  const write = log.write;
  return (route, status, startedAt, nodeErrors, req, ctx) => {
    metrics(route, status, startedAt, nodeErrors, req, ctx);
    write(route, status, startedAt, nodeErrors, req, ctx);
  };
}

/** What the gateway holds while listening: the hook, and how to stop the log. */
export interface RequestObserver {
  onFinished: RequestFinished;
  accessLog: AccessLog | undefined;
  close(): Promise<void>;
}

/**
 * Builds the completion hook from system.yaml: metrics always, the access log
 * when `access_log.output` is not `off`; a file log reopens on SIGUSR1.
 */
export function observeRequests(
  metrics: RequestFinished,
  system: SystemConfig,
  logger: Logger,
): RequestObserver {
  const config = system.access_log;
  const log = config.output === 'off' ? undefined : new AccessLog(config, system, logger);
  const onSignal = () => log?.reopen();
  if (log?.file !== undefined) process.on('SIGUSR1', onSignal);
  return {
    onFinished: requestFinishedHook(metrics, log),
    accessLog: log,
    close: async () => {
      process.off('SIGUSR1', onSignal);
      await log?.close();
    },
  };
}
