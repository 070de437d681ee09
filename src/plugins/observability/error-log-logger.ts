import { ConfigError, definePlugin } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, type LogEntry, type LogFormat } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { ndjson, tcpSend } from './shared/transport.js';

interface ErrorLogLoggerConfig extends BatchConfig {
  host: string;
  port: number;
  timeout: number;
  level: string;
  tls: boolean;
  log_format?: LogFormat;
}

const LEVELS = ['STDERR', 'EMERG', 'ALERT', 'CRIT', 'ERR', 'ERROR', 'WARN', 'NOTICE', 'INFO', 'DEBUG'];

/**
 * Ships an entry only for requests that collected error records
 * (`ctx.errors`), as newline-delimited JSON over TCP.
 */
export const errorLogLogger = definePlugin({
  type: 'error-log-logger',
  category: 'observability',
  description: 'Ship entries of requests that recorded node errors, as newline-delimited JSON over TCP.',
  schema: loggerSchema(
    {
      host: { type: 'string', minLength: 1, description: 'Collector host. Never templated.' },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per batch.' },
      level: { type: 'string', enum: LEVELS, default: 'WARN', description: 'Accepted for compatibility.' },
      tls: { type: 'boolean', default: false, description: 'Not supported: `true` is rejected.' },
      log_format: entryProperties.log_format,
      ...batchProperties(),
    },
    ['host', 'port'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: ErrorLogLoggerConfig) => formatReadsBody(config),
  create(config: ErrorLogLoggerConfig, env) {
    if (config.tls) throw new ConfigError('tls', 'TLS to the collector is not supported');
    const build = entryBuilder(config, env);
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: (ctx) => (ctx.errors.length === 0 ? undefined : build(ctx)),
      ship: (batch) => tcpSend(config.host, config.port, Buffer.from(ndjson(batch)), config.timeout * 1000),
    });
  },
});
