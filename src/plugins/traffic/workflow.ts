import { compileCondition, type Condition } from '../../conditions/index.js';
import { validateAgainst } from '../../config/schema-validate.js';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';
import { throttledWarning } from '../throttled-warning.js';
import {
  compileFixedWindow,
  fixedWindowProperties,
  setQuotaHeaders,
  type FixedWindowConfig,
} from './fixed-window.js';
import type { WindowResult } from './window-counter.js';

interface WorkflowConfig {
  rules: { case?: unknown[]; actions: [string, Record<string, unknown>?][] }[];
}

type WorkflowPort = 'success' | 'denied' | 'limited';

/** One compiled rule: its gate and what its first action does to a matching request. */
interface Rule {
  gate: Condition | undefined;
  act(ctx: Context): WorkflowPort | Promise<WorkflowPort>;
}

const returnSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['code'],
  properties: { code: { type: 'integer', minimum: 100, maximum: 599 } },
} as const;

const limitCountSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['count', 'time_window'],
  properties: fixedWindowProperties,
} as const;

const DENIED_BODY = { error_msg: 'rejected by workflow' };

/**
 * Ordered rules of condition → action; the first matching rule's first action
 * applies: `return` answers with a status, `limit-count` counts the request
 * (locally or in a store) and rejects over the limit.
 *
 * @example
 * ```yaml
 * - id: flow
 *   type: workflow
 *   config:
 *     rules:
 *       - case: [["request.headers.x-tier", "==", "free"]]
 *         actions: [["limit-count", { count: 10, time_window: 60, rejected_code: 429 }]]
 *       - case: [["uri", "~~", "^/admin"]]
 *         actions: [["return", { code: 403 }]]
 * ```
 */
export const workflow = definePlugin({
  type: 'workflow',
  category: 'traffic',
  description:
    'Ordered condition rules whose first action returns a status or applies a limit-count (local or store-backed).',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['rules'],
    properties: {
      rules: {
        type: 'array',
        minItems: 1,
        description: 'Evaluated in order; the first rule whose case holds applies its first action.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['actions'],
          properties: {
            case: {
              type: 'array',
              description: 'Condition expression (docs/conditions.md); absent = always.',
            },
            actions: {
              type: 'array',
              minItems: 1,
              description:
                "[[name, params]]: 'return' {code} or 'limit-count' {count, time_window, …}; only the first applies.",
              items: {
                type: 'array',
                minItems: 1,
                maxItems: 2,
                items: [{ type: 'string' }, { type: 'object' }],
              },
            },
          },
        },
      },
    },
  },
  outputs: {
    success: { kind: 'success' },
    denied: {
      kind: 'outcome',
      description:
        "A 'return' rule rejected the request; the configured response is prepared. Wire to client.",
    },
    limited: {
      kind: 'outcome',
      description:
        "A 'limit-count' rule's quota was exceeded; a rejection response is prepared. Wire to client.",
    },
  },
  templated: ['rules[].actions[][1].key'],
  readsResponseBody: (config: WorkflowConfig) =>
    config.rules.some((rule) => {
      const key = rule.actions[0]?.[1]?.['key'];
      if (typeof key === 'string' && mentionsResponseBody(key, true)) return true;
      try {
        return rule.case !== undefined && compileCondition(rule.case, 'case').readsResponseBody;
      } catch {
        return false; // create reports the bad expression
      }
    }),
  create(config: WorkflowConfig, env) {
    const rules = config.rules.map((rule, i) => compileRule(rule, i, env));
    return {
      run(ctx) {
        for (const rule of rules)
          if (rule.gate === undefined || rule.gate.evaluate(ctx)) return rule.act(ctx);
        return 'success';
      },
    };
  },
});

function compileRule(rule: WorkflowConfig['rules'][number], index: number, env: PluginEnv): Rule {
  const at = `rules[${index}]`;
  const gate = rule.case === undefined ? undefined : compileCondition(rule.case, `${at}.case`);
  const [name, params = {}] = rule.actions[0] ?? [];
  const paramsAt = `${at}.actions[0][1]`;
  const checked = (schema: object): void => {
    const issue = validateAgainst(schema, params, paramsAt)[0];
    if (issue !== undefined) throw new ConfigError(issue.path, issue.message);
  };
  if (rule.actions.length > 1)
    env.warn(`${at}.actions`, 'only the first action applies; the others are ignored');
  switch (name) {
    case 'return': {
      checked(returnSchema);
      const code = params['code'] as number;
      return {
        gate,
        act(ctx) {
          ctx.response.json(code, DENIED_BODY);
          return 'denied';
        },
      };
    }
    case 'limit-count': {
      checked(limitCountSchema);
      return { gate, act: limitAction(params as unknown as FixedWindowConfig, index, env, paramsAt) };
    }
    default:
      throw new ConfigError(
        `${at}.actions[0][0]`,
        `unknown action '${String(name)}' (one of: return, limit-count)`,
      );
  }
}

function limitAction(
  config: FixedWindowConfig,
  index: number,
  env: PluginEnv,
  path: string,
): (ctx: Context) => WorkflowPort | Promise<WorkflowPort> {
  const window = compileFixedWindow(config, env, `workflow:${env.policy}/${env.nodeId}:${index}`, path);
  const rejection = config.rejected_msg === undefined ? undefined : { error_msg: config.rejected_msg };
  const warn = throttledWarning(env);
  const finish = (ctx: Context, result: WindowResult): WorkflowPort => {
    if (config.show_limit_quota_header) setQuotaHeaders(ctx.response.headers, window.limit, result);
    if (result.allowed) return 'success';
    if (rejection === undefined) {
      ctx.response.status = config.rejected_code;
      ctx.response.setBody('');
    } else ctx.response.json(config.rejected_code, rejection);
    return 'limited';
  };
  const degrade = (err: unknown): WorkflowPort => {
    if (config.allow_degradation) {
      warn(err, 'workflow: the counter store failed; letting requests through (allow_degradation)');
      return 'success';
    }
    throw new NodeError('RATE_LIMIT_ERROR', 'workflow limit-count: the counter store failed', {
      metadata: { store: config.store ?? '', rule: index },
      cause: err,
    });
  };
  return (ctx) => {
    let result: WindowResult | Promise<WindowResult>;
    try {
      result = window.take(ctx);
    } catch (err) {
      return degrade(err);
    }
    if (result instanceof Promise) return result.then((r) => finish(ctx, r), degrade);
    return finish(ctx, result);
  };
}
