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

interface HttpLoggerConfig extends EntryConfig, BatchConfig {
  uri: string;
  method: string;
  headers: Record<string, string | number | boolean>;
  auth_header?: string;
  concat_method: 'json' | 'new_line';
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

/** Ships batches of entries to any HTTP collector: a JSON array, or one JSON document per line. */
export const httpLogger = definePlugin({
  type: 'http-logger',
  category: 'observability',
  description: 'Ship access-log entries in batches to an HTTP endpoint (JSON array or newline-delimited).',
  schema: loggerSchema(
    {
      uri: { type: 'string', minLength: 1, description: 'Collector URL (http or https). Never templated.' },
      method: { type: 'string', pattern: '^[A-Za-z]+$', default: 'POST' },
      headers: {
        type: 'object',
        additionalProperties: { type: ['string', 'number', 'boolean'] },
        default: {},
        description: 'Extra headers on every shipment.',
      },
      auth_header: { type: 'string', description: 'Value of the Authorization header.' },
      concat_method: { type: 'string', enum: ['json', 'new_line'], default: 'json' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['uri'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: HttpLoggerConfig) => formatReadsBody(config),
  create(config: HttpLoggerConfig, env) {
    const endpoint = new HttpEndpoint(config.uri, 'uri', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout * 1000,
    });
    const json = config.concat_method === 'json';
    const headers = ['content-type', json ? 'application/json' : 'text/plain'];
    for (const [name, value] of Object.entries(config.headers)) headers.push(name, String(value));
    if (config.auth_header !== undefined) headers.push('authorization', config.auth_header);
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: async (batch) => {
        await endpoint.send({
          method: config.method.toUpperCase(),
          headers,
          body: json ? JSON.stringify(batch) : ndjson(batch),
        });
      },
      release: () => endpoint.release(),
    });
  },
});
