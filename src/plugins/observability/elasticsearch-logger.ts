import { definePlugin } from '../../core/plugin.js';
import { Undeliverable } from './shared/batch.js';
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
import { endpointRing } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface ElasticsearchLoggerConfig extends EntryConfig, BatchConfig {
  endpoint_addr?: string;
  endpoint_addrs?: string[];
  field: { index: string; type?: string };
  auth?: { username: string; password: string };
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

/** Indexes entries through the Elasticsearch `_bulk` API (NDJSON action/document pairs). */
export const elasticsearchLogger = definePlugin({
  type: 'elasticsearch-logger',
  category: 'observability',
  description: 'Index access-log entries in Elasticsearch through the _bulk API, in batches.',
  schema: loggerSchema(
    {
      endpoint_addr: {
        type: 'string',
        minLength: 1,
        description: 'Elasticsearch base URL. Never templated.',
      },
      endpoint_addrs: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', minLength: 1 },
        description: 'Several base URLs, used in turn.',
      },
      field: {
        type: 'object',
        additionalProperties: false,
        required: ['index'],
        properties: {
          index: { type: 'string', minLength: 1, description: 'Target index (a literal name).' },
          type: { type: 'string', description: 'Accepted for compatibility; no `_type` is sent (ES 7+).' },
        },
      },
      auth: {
        type: 'object',
        additionalProperties: false,
        required: ['username', 'password'],
        properties: { username: { type: 'string' }, password: { type: 'string' } },
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 10, description: 'Seconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['field'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: ElasticsearchLoggerConfig) => formatReadsBody(config),
  create(config: ElasticsearchLoggerConfig, env) {
    const ring = endpointRing(
      {
        single: config.endpoint_addr,
        list: config.endpoint_addrs,
        singleKey: 'endpoint_addr',
        listKey: 'endpoint_addrs',
      },
      '_bulk',
      { sslVerify: config.ssl_verify, tls: config.tls, timeoutMs: config.timeout * 1000 },
    );
    const action = JSON.stringify({ index: { _index: config.field.index } });
    const headers = ['content-type', 'application/x-ndjson'];
    if (config.auth !== undefined) {
      const basic = Buffer.from(`${config.auth.username}:${config.auth.password}`).toString('base64');
      headers.push('authorization', `Basic ${basic}`);
    }
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: entryBuilder(config, env),
      ship: async (batch) => {
        let body = '';
        for (const entry of batch) body += `${action}\n${JSON.stringify(entry)}\n`;
        const answer = await ring.next().send({ headers, body });
        // `_bulk` answers 200 even when documents were refused; resending would duplicate the rest.
        const result = parse(answer.body);
        if (result?.errors === true) {
          throw new Undeliverable(`elasticsearch refused documents: ${firstReason(result)}`);
        }
      },
      release: () => ring.release(),
    });
  },
});

interface BulkResult {
  errors?: boolean;
  items?: Record<string, { error?: { reason?: string } }>[];
}

function parse(body: Buffer): BulkResult | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as BulkResult;
  } catch {
    return undefined;
  }
}

function firstReason(result: BulkResult): string {
  for (const item of result.items ?? []) {
    for (const op of Object.values(item)) if (op.error?.reason !== undefined) return op.error.reason;
  }
  return 'no reason given';
}
