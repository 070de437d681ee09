import { hostname } from 'node:os';
import { ConfigError, definePlugin } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, type EntryConfig, stamp, type Stamped } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { tcpSend, udpSend } from './shared/transport.js';

interface SyslogConfig extends EntryConfig, BatchConfig {
  host: string;
  port: number;
  sock_type: 'tcp' | 'udp';
  timeout: number;
  tls: boolean;
  flush_limit?: number;
  drop_limit?: number;
  pool_size?: number;
}

/** facility local0 (16), severity informational (6). */
const PRI = 16 * 8 + 6;
const APP_NAME = 'switchyard';
/** RFC 5424 HOSTNAME: printable US-ASCII, at most 255 characters. */
const HOST =
  hostname()
    .replace(/[^\x21-\x7e]/g, '')
    .slice(0, 255) || '-';

/**
 * Ships entries as RFC 5424 messages (`<134>1 TIMESTAMP HOST switchyard PID
 * access - {json}`): over TCP with RFC 6587 octet-counting framing, over UDP
 * one message per datagram.
 */
export const syslog = definePlugin({
  type: 'syslog',
  category: 'observability',
  description: 'Ship access-log entries as RFC 5424 syslog messages over TCP or UDP.',
  schema: loggerSchema(
    {
      host: { type: 'string', minLength: 1, description: 'Syslog server host. Never templated.' },
      port: { type: 'integer', minimum: 1, maximum: 65535, default: 5140 },
      sock_type: { type: 'string', enum: ['tcp', 'udp'], default: 'tcp' },
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Milliseconds per batch.' },
      tls: { type: 'boolean', default: false, description: 'Not supported: `true` is rejected.' },
      flush_limit: {
        type: 'integer',
        minimum: 0,
        description: 'Accepted and ignored (the BATCH keys decide).',
      },
      drop_limit: { type: 'integer', minimum: 0, description: 'Accepted and ignored.' },
      pool_size: { type: 'integer', minimum: 0, description: 'Accepted and ignored.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['host'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: SyslogConfig) => formatReadsBody(config),
  create(config: SyslogConfig, env) {
    if (config.tls) throw new ConfigError('tls', 'TLS to the syslog server is not supported');
    const build = entryBuilder(config, env);
    const header = ` ${HOST} ${APP_NAME} ${process.pid} access - `;
    const send =
      config.sock_type === 'tcp'
        ? (batch: string[]) =>
            tcpSend(
              config.host,
              config.port,
              Buffer.from(batch.map((m) => `${Buffer.byteLength(m)} ${m}`).join('')),
              config.timeout,
            )
        : (batch: string[]) =>
            udpSend(
              config.host,
              config.port,
              batch.map((m) => Buffer.from(m)),
              config.timeout,
            );
    return logNode<Stamped>(env, batchSettings(config), {
      encode: stamp(build),
      ship: (batch) =>
        send(
          batch.map(
            ({ at, entry }) => `<${PRI}>1 ${new Date(at).toISOString()}${header}${JSON.stringify(entry)}`,
          ),
        ),
    });
  },
});
