import { ConfigError, definePlugin } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, type EntryConfig, type LogEntry } from './shared/entry.js';
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

interface TcpLoggerConfig extends EntryConfig, BatchConfig {
  host: string;
  port: number;
  timeout: number;
  tls: boolean;
  tls_options?: string;
}

/** Ships newline-delimited JSON entries over a plain TCP connection, one connection per batch. */
export const tcpLogger = definePlugin({
  type: 'tcp-logger',
  category: 'observability',
  description: 'Ship access-log entries as newline-delimited JSON over TCP, in batches.',
  schema: loggerSchema(
    {
      host: { type: 'string', minLength: 1, description: 'Collector host. Never templated.' },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      timeout: {
        type: 'integer',
        minimum: 1,
        default: 1000,
        description: 'Milliseconds for connect and write.',
      },
      tls: { type: 'boolean', default: false, description: 'Not supported: `true` is rejected.' },
      tls_options: { type: 'string', description: 'Accepted and ignored.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['host', 'port'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: TcpLoggerConfig) => formatReadsBody(config),
  create(config: TcpLoggerConfig, env) {
    if (config.tls)
      throw new ConfigError('tls', 'TLS to the collector is not supported; use a plain TCP port');
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: (batch) => tcpSend(config.host, config.port, Buffer.from(ndjson(batch)), config.timeout),
    });
  },
});
