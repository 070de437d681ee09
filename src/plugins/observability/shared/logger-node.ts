import type { Context } from '../../../core/context.js';
import type { JsonSchema, NodeInstance, PluginEnv } from '../../../core/plugin.js';
import { BatchSender, type BatchSettings, type BatchStats, type Ship } from './batch.js';

/** The batch keys every logger shares (docs/plugins/http-logger.md) (times in seconds; fractions allowed). */
export interface BatchConfig {
  batch_max_size: number;
  inactive_timeout: number;
  buffer_duration: number;
  max_retry_count: number;
  retry_delay: number;
  max_pending_entries: number;
}

export const batchProperties = (maxSizeDefault = 1000, maxSizeLimit?: number) =>
  ({
    batch_max_size: {
      type: 'integer',
      minimum: 1,
      ...(maxSizeLimit === undefined ? {} : { maximum: maxSizeLimit }),
      default: maxSizeDefault,
      description: 'Ship as soon as this many entries wait.',
    },
    inactive_timeout: {
      type: 'number',
      minimum: 0,
      default: 5,
      description: 'Seconds without a new entry before the waiting ones are shipped.',
    },
    buffer_duration: {
      type: 'number',
      minimum: 0,
      default: 60,
      description: 'Seconds the oldest waiting entry may wait, however busy the node is.',
    },
    max_retry_count: {
      type: 'integer',
      minimum: 0,
      default: 0,
      description: 'Further attempts after a failed shipment before its entries are dropped.',
    },
    retry_delay: { type: 'number', minimum: 0, default: 1, description: 'Seconds between attempts.' },
    max_pending_entries: {
      type: 'integer',
      minimum: 1,
      default: 10000,
      description: 'Entries held while waiting; when full, the oldest is dropped.',
    },
  }) as const;

/** The entry keys every logger shares (docs/plugins/http-logger.md). */
export const entryProperties = {
  log_format: {
    type: 'object',
    additionalProperties: { type: ['string', 'number', 'boolean'] },
    description:
      'Field name → template (`$var` and `{{…}}`) or constant; replaces the default entry when set.',
  },
  include_req_body: {
    type: 'boolean',
    default: false,
    description: 'Add the request body to the default entry.',
  },
  include_resp_body: {
    type: 'boolean',
    default: false,
    description: 'Add the response body to the default entry.',
  },
} as const;

/** A closed object schema: the logger's own keys plus the shared groups. */
export function loggerSchema(
  properties: Record<string, unknown>,
  required: readonly string[] = [],
): JsonSchema {
  return { type: 'object', additionalProperties: false, required: [...required], properties };
}

export function batchSettings(config: BatchConfig): BatchSettings {
  return {
    maxSize: config.batch_max_size,
    inactiveMs: config.inactive_timeout * 1000,
    bufferDurationMs: config.buffer_duration * 1000,
    maxRetries: config.max_retry_count,
    retryDelayMs: config.retry_delay * 1000,
    maxPending: config.max_pending_entries,
  };
}

/** What a logger type contributes: how a request becomes an item, and how items reach the service. */
export interface LogSink<T> {
  /** Called on the request path; `undefined` skips the request. Must be cheap. */
  encode(ctx: Context): T | undefined;
  ship: Ship<T>;
  /** Releases pools and handles once the last shipment is done. */
  release?(): void;
}

/** A logger node with a readable queue, for tests and diagnostics. */
export interface LogNode extends NodeInstance<'success'> {
  readonly stats: () => BatchStats;
}

/**
 * The node every batched logger returns: `run` encodes the request and
 * queues it synchronously, then leaves through `success`; shipping happens in
 * the background and never fails or delays the request.
 */
export function logNode<T>(env: PluginEnv, settings: BatchSettings, sink: LogSink<T>): LogNode {
  const where = { policy: env.policy, node: env.nodeId };
  const sender = new BatchSender<T>(settings, sink.ship, (kind, count, error) => {
    env.logger.warn(
      { ...where, [kind]: count, ...(error === undefined ? {} : { err: error.message }) },
      kind === 'dropped'
        ? 'logger buffer full: dropped the oldest entries'
        : 'logger shipment failed: entries dropped',
    );
  });
  let encodeFailed = false;
  return {
    stats: () => sender.stats,
    run(ctx) {
      try {
        const item = sink.encode(ctx);
        if (item !== undefined) sender.push(item);
      } catch (err) {
        // A log entry is never worth failing the request over; say so once.
        if (!encodeFailed) {
          encodeFailed = true;
          env.logger.warn({ ...where, err: (err as Error).message }, 'logger could not build an entry');
        }
      }
      return 'success';
    },
    async close() {
      await sender.close();
      sink.release?.();
    },
  };
}

export const successOnly = {
  success: { kind: 'success', description: 'Always, at once: delivery happens in the background.' },
} as const;
