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
import { HttpEndpoint, joinUrl } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface LagoConfig extends EntryConfig, BatchConfig {
  endpoint: string;
  token: string;
  event_transaction_id: string;
  subscription_id: string;
  event_code: string;
  endpoint_uri: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

interface LagoEvent {
  transaction_id: string;
  external_subscription_id: string;
  code: string;
  timestamp: number;
  properties: LogEntry;
}

/** Lago takes at most 100 events per batch call. */
const LAGO_BATCH_LIMIT = 100;

/**
 * Meters requests as Lago usage events, POSTed in batches to
 * `/api/v1/events/batch`. The transaction and subscription ids are legacy
 * `$var` / `{{…}}` templates rendered per request; `properties` is the entry.
 */
export const lago = definePlugin({
  type: 'lago',
  category: 'observability',
  description: 'Meter requests as Lago billing events (batch events API).',
  schema: loggerSchema(
    {
      endpoint: { type: 'string', minLength: 1, description: 'Lago API base URL. Never templated.' },
      token: { type: 'string', minLength: 1, description: 'API key, sent as a Bearer token.' },
      event_transaction_id: {
        type: 'string',
        minLength: 1,
        description: 'Template of the idempotency id (`$var` and `{{…}}`).',
      },
      subscription_id: {
        type: 'string',
        minLength: 1,
        description: 'Template of the external subscription id (`$var` and `{{…}}`).',
      },
      event_code: { type: 'string', minLength: 1, description: 'Billable metric code.' },
      endpoint_uri: { type: 'string', default: '/api/v1/events/batch' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Milliseconds per shipment.' },
      ...entryProperties,
      ...batchProperties(LAGO_BATCH_LIMIT, LAGO_BATCH_LIMIT),
    },
    ['endpoint', 'token', 'event_transaction_id', 'subscription_id', 'event_code'],
  ),
  outputs: successOnly,
  templated: ['event_transaction_id', 'subscription_id', 'log_format'],
  readsResponseBody: (config: LagoConfig) =>
    formatReadsBody(config, config.event_transaction_id, config.subscription_id),
  create(config: LagoConfig, env) {
    const endpoint = new HttpEndpoint(joinUrl(config.endpoint, config.endpoint_uri), 'endpoint', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout,
    });
    const legacy = { legacy: true, phase: 'response' } as const;
    const transactionId = env.template(config.event_transaction_id, 'event_transaction_id', legacy);
    const subscriptionId = env.template(config.subscription_id, 'subscription_id', legacy);
    const build = entryBuilder(config, env);
    const headers = ['content-type', 'application/json', 'authorization', `Bearer ${config.token}`];
    return logNode<LagoEvent>(env, batchSettings(config), {
      encode: (ctx) => ({
        transaction_id: transactionId.render(ctx),
        external_subscription_id: subscriptionId.render(ctx),
        code: config.event_code,
        timestamp: Math.floor(Date.now() / 1000),
        properties: build(ctx),
      }),
      ship: async (events) => {
        await endpoint.send({ headers, body: JSON.stringify({ events }) });
      },
      release: () => endpoint.release(),
    });
  },
});
