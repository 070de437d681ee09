import { Counter } from 'prom-client';
import { definePlugin } from '../../core/plugin.js';
import { loggerSchema } from './shared/logger-node.js';
import { configReadsRequestBody } from '../request-body-refs.js';

interface PrometheusConfig {
  prefer_name: boolean;
}

/**
 * Counts requests per consumer and route on the gateway's registry
 * (`gateway_consumer_requests_total`); every other metric is built in and
 * needs no node. Place it after the auth node that names the consumer.
 */
export const prometheus = definePlugin({
  type: 'prometheus',
  readsRequestBody: configReadsRequestBody,
  category: 'observability',
  description: 'Count requests per consumer and route (gateway_consumer_requests_total).',
  schema: loggerSchema({
    prefer_name: {
      type: 'boolean',
      default: false,
      description: 'Accepted; the route label is the route name.',
    },
  }),
  outputs: { success: { kind: 'success', description: 'Always, at once.' } },
  readsResponseBody: () => false,
  create(_config: PrometheusConfig, env) {
    const metrics = env.scope.metrics;
    // One counter per gateway: every prometheus node and every reload shares it.
    const counter = env.scope.shared(
      'prometheus:gateway_consumer_requests_total',
      () =>
        new Counter({
          name: 'gateway_consumer_requests_total',
          help: 'Requests that passed a prometheus node, by consumer ("anonymous" when none) and route.',
          labelNames: ['consumer', 'route'],
          registers: [metrics.registry],
        }),
    );
    return {
      run(ctx) {
        const consumer = ctx.consumer?.name;
        counter.inc({
          consumer: consumer === undefined || consumer === '' ? 'anonymous' : consumer,
          route: ctx.route,
        });
        return 'success';
      },
    };
  },
});
