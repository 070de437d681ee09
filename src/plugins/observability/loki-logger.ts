import { definePlugin } from '../../core/plugin.js';
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
import { endpointRing } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

type Labels = Record<string, string>;

interface LokiLoggerConfig extends EntryConfig, BatchConfig {
  endpoint_addrs: string | string[];
  endpoint_uri: string;
  tenant_id: string;
  log_labels?: Labels;
  labels?: Labels;
  headers: Record<string, string | number | boolean>;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

const labelsSchema = { type: 'object', additionalProperties: { type: 'string' } } as const;

/** Pushes entries to Loki's push API: one stream (the static labels) with `[ns, line]` values. */
export const lokiLogger = definePlugin({
  type: 'loki-logger',
  category: 'observability',
  description: 'Push access-log entries to Grafana Loki (push API, JSON), in batches.',
  schema: loggerSchema(
    {
      endpoint_addrs: {
        anyOf: [
          { type: 'string', minLength: 1 },
          { type: 'array', minItems: 1, items: { type: 'string' } },
        ],
        description: 'Loki base URL(s), used in turn. Never templated.',
      },
      endpoint_uri: { type: 'string', default: '/loki/api/v1/push' },
      tenant_id: { type: 'string', default: 'fake', description: 'Sent as X-Scope-OrgID.' },
      log_labels: { ...labelsSchema, description: 'Stream labels; default `{job: featherbit}`.' },
      labels: { ...labelsSchema, description: 'Alias of `log_labels`.' },
      headers: {
        type: 'object',
        additionalProperties: { type: ['string', 'number', 'boolean'] },
        default: {},
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'integer', minimum: 1, default: 3000, description: 'Milliseconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['endpoint_addrs'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: LokiLoggerConfig) => formatReadsBody(config),
  create(config: LokiLoggerConfig, env) {
    const list = typeof config.endpoint_addrs === 'string' ? [config.endpoint_addrs] : config.endpoint_addrs;
    const ring = endpointRing(
      { single: undefined, list, singleKey: 'endpoint_addrs', listKey: 'endpoint_addrs' },
      config.endpoint_uri,
      { sslVerify: config.ssl_verify, tls: config.tls, timeoutMs: config.timeout },
    );
    const stream = config.log_labels ?? config.labels ?? { job: 'featherbit' };
    const headers = ['content-type', 'application/json', 'x-scope-orgid', config.tenant_id];
    for (const [name, value] of Object.entries(config.headers)) headers.push(name, String(value));
    const build = entryBuilder(config, env);
    return logNode<Stamped>(env, batchSettings(config), {
      encode: stamp(build),
      ship: async (batch) => {
        // Loki wants the time in nanoseconds, as a decimal string.
        const values = batch.map(({ at, entry }) => [`${at}000000`, JSON.stringify(entry)]);
        await ring.next().send({ headers, body: JSON.stringify({ streams: [{ stream, values }] }) });
      },
      release: () => ring.release(),
    });
  },
});
