import { Counter, Histogram, type Registry } from 'prom-client';
import type { GatewayScope } from '../../core/plugin.js';

/** Seconds: a local model's first token in milliseconds up to a long generation. */
const TTFT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
const DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];

type CallLabels = 'policy' | 'node' | 'provider' | 'model';

/** The series of docs/metrics.md#ai-gateway, one set per gateway (every ai-proxy node shares them). */
export class AiMetrics {
  readonly tokens: Counter<CallLabels | 'type'>;
  readonly requests: Counter<CallLabels | 'status'>;
  readonly firstToken: Histogram<CallLabels>;
  readonly duration: Histogram<CallLabels>;
  readonly fallbacks: Counter<'policy' | 'node' | 'from' | 'to'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.tokens = new Counter({
      name: 'gateway_ai_tokens_total',
      help: 'LLM tokens of answered calls, from the provider usage, by policy, node, provider, model called and type (prompt, completion).',
      labelNames: ['policy', 'node', 'provider', 'model', 'type'],
      registers,
    });
    this.requests = new Counter({
      name: 'gateway_ai_requests_total',
      help: 'Calls to LLM providers, one per target tried, by policy, node, provider, model called and HTTP status (504 timeout, 502 connection failure).',
      labelNames: ['policy', 'node', 'provider', 'model', 'status'],
      registers,
    });
    this.firstToken = new Histogram({
      name: 'gateway_ai_time_to_first_token_seconds',
      help: 'Time from the request reaching ai-proxy to the first content token of the provider answer (streamed or not).',
      labelNames: ['policy', 'node', 'provider', 'model'],
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.duration = new Histogram({
      name: 'gateway_ai_request_duration_seconds',
      help: 'Time from the request reaching ai-proxy to the end of the provider answer (its last event when streamed), fallbacks included.',
      labelNames: ['policy', 'node', 'provider', 'model'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.fallbacks = new Counter({
      name: 'gateway_ai_fallbacks_total',
      help: 'Moves from a failed target to the next one, by policy, node, target that failed (from) and target tried next (to; "" when none was left).',
      labelNames: ['policy', 'node', 'from', 'to'],
      registers,
    });
  }
}

/** The gateway's AI series, registered on first use. */
export function aiMetrics(scope: GatewayScope): AiMetrics {
  return scope.shared('ai:metrics', () => new AiMetrics(scope.metrics.registry));
}
