export type AccessFormat = 'json' | 'combined';

/** system.yaml `access_log` (docs/logging.md#access-log); written by src/observability/access-log.ts. */
export interface AccessLogConfig {
  /** `off`, `stdout`, or a file path. */
  output: string;
  format: AccessFormat;
  /** Request header whose value is logged as `request_id` (the request-id node's default). */
  request_id_header: string;
  /** Lines waiting for the disk beyond this many bytes are dropped (and counted), never queued unbounded. */
  max_buffer_bytes: number;
}
