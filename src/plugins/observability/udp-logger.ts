import { definePlugin } from '../../core/plugin.js';
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
import { udpSend } from './shared/transport.js';

interface UdpLoggerConfig extends EntryConfig, BatchConfig {
  host: string;
  port: number;
  timeout: number;
}

/** Ships each entry as one JSON datagram. */
export const udpLogger = definePlugin({
  type: 'udp-logger',
  category: 'observability',
  description: 'Ship access-log entries as JSON datagrams over UDP, one entry per datagram.',
  schema: loggerSchema(
    {
      host: { type: 'string', minLength: 1, description: 'Collector host. Never templated.' },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per batch.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['host', 'port'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: UdpLoggerConfig) => formatReadsBody(config),
  create(config: UdpLoggerConfig, env) {
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: (batch) =>
        udpSend(
          config.host,
          config.port,
          batch.map((entry) => Buffer.from(JSON.stringify(entry))),
          config.timeout * 1000,
        ),
    });
  },
});
