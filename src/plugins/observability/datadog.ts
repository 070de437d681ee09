import { definePlugin } from '../../core/plugin.js';
import { latencyMs } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { udpSend } from './shared/transport.js';

interface DatadogConfig extends BatchConfig {
  host: string;
  port: number;
  namespace: string;
  constant_tags: string[];
  include_path: boolean;
  include_method: boolean;
  prefer_name: boolean;
}

/** The agent's default receive buffer: longer datagrams are cut, so payloads are split below it. */
const MAX_DATAGRAM = 8192;
const SEND_TIMEOUT_MS = 3000;

/**
 * Sends per-request metrics to a Datadog agent in the DogStatsD format over
 * UDP: `request.counter` (c), `request.latency` (h, ms), `ingress.size` and
 * `egress.size` (ms, bytes), tagged with route, consumer, status and scheme.
 */
export const datadog = definePlugin({
  type: 'datadog',
  category: 'observability',
  description: 'Send per-request metrics to a Datadog agent over DogStatsD (UDP), in batches.',
  schema: loggerSchema({
    host: { type: 'string', minLength: 1, default: '127.0.0.1', description: 'Agent host. Never templated.' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 8125 },
    namespace: { type: 'string', default: 'featherbit', description: 'Metric name prefix.' },
    constant_tags: { type: 'array', items: { type: 'string' }, default: [] },
    include_path: { type: 'boolean', default: false, description: 'Tag metrics with `path:`.' },
    include_method: { type: 'boolean', default: false, description: 'Tag metrics with `method:`.' },
    prefer_name: { type: 'boolean', default: true, description: 'Accepted; the route name is always used.' },
    ...batchProperties(),
  }),
  outputs: successOnly,
  // docs/configuration.md#streaming: a logger without log_format buffers (egress.size is the body length).
  readsResponseBody: () => true,
  create(config: DatadogConfig, env) {
    const prefix = config.namespace === '' ? '' : `${config.namespace}.`;
    const constant = config.constant_tags.map(tagText);
    return logNode<string>(env, batchSettings(config), {
      encode(ctx) {
        const req = ctx.request;
        const status = ctx.response.status;
        const tags = [...constant, `route_name:${tagText(ctx.route)}`];
        const consumer = ctx.consumer?.name;
        if (consumer !== undefined && consumer !== '') tags.push(`consumer:${tagText(consumer)}`);
        tags.push(
          `response_status:${status}`,
          `response_status_class:${Math.floor(status / 100)}xx`,
          `scheme:${req.scheme}`,
        );
        if (config.include_method) tags.push(`method:${req.method}`);
        if (config.include_path) tags.push(`path:${tagText(req.path)}`);
        const suffix = `|#${tags.join(',')}`;
        const egress = ctx.response.body?.length ?? (Number(ctx.response.header('content-length')) || 0);
        return [
          `${prefix}request.counter:1|c${suffix}`,
          `${prefix}request.latency:${latencyMs(ctx)}|h${suffix}`,
          `${prefix}ingress.size:${req.body?.length ?? 0}|ms${suffix}`,
          `${prefix}egress.size:${egress}|ms${suffix}`,
        ].join('\n');
      },
      ship: (batch) => udpSend(config.host, config.port, datagrams(batch), SEND_TIMEOUT_MS),
    });
  },
});

/** Packs newline-joined metric lines into as few datagrams as fit under the agent's buffer. */
function datagrams(payloads: string[]): Buffer[] {
  const out: Buffer[] = [];
  let current = '';
  for (const lines of payloads) {
    for (const line of lines.split('\n')) {
      if (current !== '' && Buffer.byteLength(current) + 1 + Buffer.byteLength(line) > MAX_DATAGRAM) {
        out.push(Buffer.from(current));
        current = '';
      }
      current = current === '' ? line : `${current}\n${line}`;
    }
  }
  if (current !== '') out.push(Buffer.from(current));
  return out;
}

/** DogStatsD reserves `|`, `,`, `#` and newlines; tag values must not carry them. */
function tagText(value: string): string {
  return value.replace(/[|,#\s]/g, '_');
}
