import { definePlugin } from '../../core/plugin.js';
import { instanceName } from './skywalking.js';
import { entryBuilder, formatReadsBody, type EntryConfig } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { openSpans } from './shared/tracing.js';
import { HttpEndpoint, joinUrl } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface SkywalkingLoggerConfig extends EntryConfig, BatchConfig {
  endpoint_addr: string;
  service_name: string;
  service_instance_name: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

/**
 * Sends entries to a SkyWalking OAP as LogData (`/v3/logs`, JSON). An entry
 * made while a `skywalking` span is open carries its trace context, so the
 * OAP links the log to the trace.
 */
export const skywalkingLogger = definePlugin({
  type: 'skywalking-logger',
  category: 'observability',
  description: 'Send access-log entries to an Apache SkyWalking OAP as LogData, in batches.',
  schema: loggerSchema(
    {
      endpoint_addr: { type: 'string', minLength: 1, description: 'OAP base URL. Never templated.' },
      service_name: { type: 'string', minLength: 1, default: 'featherbit' },
      service_instance_name: {
        type: 'string',
        minLength: 1,
        default: 'featherbit Instance Name',
        description: '`$hostname` is replaced by the host name.',
      },
      ssl_verify: { type: 'boolean', default: true },
      tls: calloutTlsSchema,
      timeout: { type: 'number', exclusiveMinimum: 0, default: 3, description: 'Seconds per shipment.' },
      ...entryProperties,
      ...batchProperties(),
    },
    ['endpoint_addr'],
  ),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: SkywalkingLoggerConfig) => formatReadsBody(config),
  create(config: SkywalkingLoggerConfig, env) {
    const endpoint = new HttpEndpoint(joinUrl(config.endpoint_addr, 'v3/logs'), 'endpoint_addr', {
      sslVerify: config.ssl_verify,
      tls: config.tls,
      timeoutMs: config.timeout * 1000,
    });
    const service = config.service_name;
    const serviceInstance = instanceName(config.service_instance_name);
    const build = entryBuilder(config, env);
    return logNode<Record<string, unknown>>(env, batchSettings(config), {
      encode(ctx) {
        const span = openSpans.skywalking.get(ctx);
        return {
          timestamp: Date.now(),
          service,
          serviceInstance,
          endpoint: ctx.request.path,
          body: { json: { json: JSON.stringify(build(ctx)) } },
          ...(span === undefined
            ? {}
            : { traceContext: { traceId: span.traceId, traceSegmentId: span.spanId, spanId: 0 } }),
        };
      },
      ship: async (logs) => {
        await endpoint.send({ headers: ['content-type', 'application/json'], body: JSON.stringify(logs) });
      },
      release: () => endpoint.release(),
    });
  },
});
