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
import { HttpEndpoint, ndjson } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface LogglyConfig extends EntryConfig, BatchConfig {
  customer_token: string;
  tags: string[];
  host: string;
  severity: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

const SEVERITIES = ['DEBUG', 'INFO', 'NOTICE', 'WARNING', 'ERR', 'CRIT', 'ALERT', 'EMEGR', 'EMERG'];

/** Sends entries to Loggly's bulk endpoint (`/bulk/<token>/tag/<tags>/`, newline-delimited JSON). */
export const loggly = definePlugin({
  type: 'loggly',
  category: 'observability',
  description: 'Send access-log entries to Loggly through its HTTP bulk endpoint, in batches.',
  schema: loggerSchema(
    {
      customer_token: { type: 'string', minLength: 1 },
      tags: {
        type: 'array',
        items: { type: 'string', pattern: '^[A-Za-z0-9._-]+$' },
        default: ['featherbit'],
      },
      host: {
        type: 'string',
        minLength: 1,
        default: 'logs-01.loggly.com',
        description: 'Loggly host; https unless a scheme is given. Never templated.',
      },
      severity: {
        type: 'string',
        default: 'INFO',
        description: 'Accepted; the bulk endpoint has no severity.',
        enum: [...SEVERITIES, ...SEVERITIES.map((s) => s.toLowerCase())],
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 5000, description: 'Milliseconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['customer_token'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: LogglyConfig) => formatReadsBody(config),
  create(config: LogglyConfig, env) {
    const base = /^[a-z][a-z0-9+.-]*:\/\//i.test(config.host) ? config.host : `https://${config.host}`;
    const tags = config.tags.length === 0 ? 'bulk' : config.tags.join(',');
    const url = `${base.replace(/\/+$/, '')}/bulk/${encodeURIComponent(config.customer_token)}/tag/${tags}/`;
    const endpoint = new HttpEndpoint(url, 'host', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout,
    });
    const headers = ['content-type', 'text/plain'];
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: async (batch) => {
        await endpoint.send({ headers, body: ndjson(batch) });
      },
      release: () => endpoint.release(),
    });
  },
});
