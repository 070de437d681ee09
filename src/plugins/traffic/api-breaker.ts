import { ConfigError, definePlugin } from '../../core/plugin.js';
import { breakerFor, type BreakerPolicy } from './breaker-state.js';
import { configReadsRequestBody } from '../request-body-refs.js';

type Phase = 'check' | 'observe';

interface ApiBreakerConfig {
  phase?: Phase;
  role?: Phase;
  id: string;
  unhealthy: { http_statuses: number[]; failures: number };
  healthy: { http_statuses: number[]; successes: number };
  break_response_code: number;
  break_response_body?: string;
  break_base_sec: number;
  max_breaker_sec: number;
}

const statuses = (fallback: number) =>
  ({
    type: 'array',
    minItems: 1,
    items: { type: 'integer', minimum: 200, maximum: 599 },
    default: [fallback],
  }) as const;

/**
 * Circuit breaker as a node pair sharing `id`: `check` before the upstream
 * rejects while the breaker is open; `observe` after it feeds the response
 * status back.
 */
export const apiBreaker = definePlugin({
  type: 'api-breaker',
  readsRequestBody: configReadsRequestBody,
  category: 'traffic',
  description:
    'Circuit breaker as a check/observe node pair sharing an id: observe counts upstream statuses, check short-circuits while open.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['id'],
    properties: {
      phase: {
        type: 'string',
        enum: ['check', 'observe'],
        description: 'check (before upstream) or observe (after).',
      },
      role: { type: 'string', enum: ['check', 'observe'], description: 'Alias of phase.' },
      id: {
        type: 'string',
        minLength: 1,
        description: 'Shared breaker id linking the check and observe nodes.',
      },
      unhealthy: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          http_statuses: statuses(500),
          failures: { type: 'integer', minimum: 1, default: 3 },
        },
      },
      healthy: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          http_statuses: statuses(200),
          successes: { type: 'integer', minimum: 1, default: 3 },
        },
      },
      break_response_code: { type: 'integer', minimum: 200, maximum: 599, default: 502 },
      break_response_body: { type: 'string', description: 'Body sent while the breaker is open.' },
      break_base_sec: {
        type: 'integer',
        minimum: 1,
        default: 2,
        description: 'First cooldown; doubles per trip.',
      },
      max_breaker_sec: { type: 'integer', minimum: 3, default: 300, description: 'Cooldown ceiling.' },
    },
  },
  outputs: {
    success: { kind: 'success' },
    broken: {
      kind: 'outcome',
      description: 'The circuit breaker is open; the break response is prepared. Wire to client.',
    },
  },
  create(config: ApiBreakerConfig) {
    if (config.phase !== undefined && config.role !== undefined && config.phase !== config.role) {
      throw new ConfigError('role', `contradicts phase '${config.phase}'`);
    }
    const phase = config.phase ?? config.role;
    if (phase === undefined) throw new ConfigError('phase', "is required: 'check' or 'observe'");
    const state = breakerFor(config.id);

    if (phase === 'check') {
      const status = config.break_response_code;
      const body = config.break_response_body ?? '';
      return {
        run(ctx) {
          if (!state.isOpen(Date.now())) return 'success';
          ctx.response.status = status;
          ctx.response.setBody(body);
          return 'broken';
        },
      };
    }

    const policy: BreakerPolicy = {
      unhealthyFailures: config.unhealthy.failures,
      healthySuccesses: config.healthy.successes,
      breakBaseMs: config.break_base_sec * 1000,
      maxBreakerMs: config.max_breaker_sec * 1000,
    };
    const unhealthy = new Set(config.unhealthy.http_statuses);
    const healthy = new Set(config.healthy.http_statuses);
    return {
      run(ctx) {
        const status = ctx.response.status;
        if (unhealthy.has(status)) state.recordFailure(policy, Date.now());
        else if (healthy.has(status)) state.recordSuccess(policy);
        return 'success';
      },
    };
  },
});
