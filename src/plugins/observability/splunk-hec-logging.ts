import { hostname } from 'node:os';
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
import { HttpEndpoint } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface SplunkHecConfig extends EntryConfig, BatchConfig {
  endpoint: { uri?: string; token: string; channel?: string; timeout: number };
  uri?: string;
  source: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
}

interface HecEvent {
  time: number;
  host: string;
  source: string;
  sourcetype: string;
  event: LogEntry;
}

/** Sends entries to a Splunk HTTP Event Collector: concatenated `{time, host, source, sourcetype, event}` events. */
export const splunkHecLogging = definePlugin({
  type: 'splunk-hec-logging',
  category: 'observability',
  description: 'Send access-log entries to a Splunk HTTP Event Collector, in batches.',
  schema: loggerSchema(
    {
      endpoint: {
        type: 'object',
        additionalProperties: false,
        required: ['token'],
        properties: {
          uri: {
            type: 'string',
            minLength: 1,
            description: 'HEC URL, e.g. https://splunk:8088/services/collector.',
          },
          token: { type: 'string', minLength: 1, description: 'Sent as `Authorization: Splunk <token>`.' },
          channel: { type: 'string', description: 'Sent as X-Splunk-Request-Channel.' },
          timeout: { type: 'number', exclusiveMinimum: 0, default: 10, description: 'Seconds per shipment.' },
        },
      },
      uri: { type: 'string', minLength: 1, description: 'Alias of `endpoint.uri`.' },
      source: { type: 'string', default: 'featherbit-splunk-hec-logging' },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      ...entryProperties,
      ...batchProperties(),
    },
    ['endpoint'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: SplunkHecConfig) => formatReadsBody(config),
  create(config: SplunkHecConfig, env) {
    const uri = config.endpoint.uri ?? config.uri;
    if (uri === undefined) throw new ConfigError('endpoint.uri', 'is required');
    const endpoint = new HttpEndpoint(uri, config.endpoint.uri === undefined ? 'uri' : 'endpoint.uri', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.endpoint.timeout * 1000,
    });
    const headers = ['content-type', 'application/json', 'authorization', `Splunk ${config.endpoint.token}`];
    if (config.endpoint.channel !== undefined)
      headers.push('x-splunk-request-channel', config.endpoint.channel);
    const host = hostname();
    const build = entryBuilder(config, env);
    return logNode<HecEvent>(env, batchSettings(config), {
      encode: (ctx) => ({
        time: Date.now() / 1000,
        host,
        source: config.source,
        sourcetype: '_json',
        event: build(ctx),
      }),
      ship: async (events) => {
        // HEC takes events back to back in one body; newlines between them are allowed.
        await endpoint.send({ headers, body: events.map((e) => JSON.stringify(e)).join('\n') });
      },
      release: () => endpoint.release(),
    });
  },
});
