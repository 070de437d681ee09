import { compileCondition, type Condition } from '../../conditions/index.js';
import type { Context } from '../../core/context.js';
import { definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';

type Scalar = string | number | boolean;

interface ActionConfig {
  set_headers?: Record<string, Scalar>;
  set_labels?: Record<string, Scalar>;
  weight: number;
}

interface TrafficLabelConfig {
  rules: { match?: unknown[]; actions: ActionConfig[] }[];
}

interface Action {
  weight: number;
  headers: [string, Template][];
  labels: [string, Template][];
}

interface Rule {
  match: Condition | undefined;
  actions: Action[];
  totalWeight: number;
  /** Weighted round-robin position; shared by all requests of this node. */
  cursor: number;
}

const scalarMap = {
  type: 'object',
  additionalProperties: { type: ['string', 'number', 'boolean'] },
} as const;

/** Tags matching requests: request headers and `label.<key>` message entries, one weighted action per request. */
export const trafficLabel = definePlugin({
  type: 'traffic-label',
  category: 'traffic',
  description:
    'Label matching requests (canary, A/B): the first matching rule applies one of its weighted actions, setting request headers and label.<key> message entries.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['rules'],
    properties: {
      rules: {
        type: 'array',
        minItems: 1,
        description: 'Evaluated in order; the first whose match holds applies.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['actions'],
          properties: {
            match: {
              type: 'array',
              description: 'Condition expression (docs/conditions.md); absent matches all.',
            },
            actions: {
              type: 'array',
              minItems: 1,
              description: 'One is picked per request by weighted round-robin.',
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  set_headers: {
                    ...scalarMap,
                    description: 'Request headers to set ({{…}} and legacy $var).',
                  },
                  set_labels: {
                    ...scalarMap,
                    description: 'message label.<key> entries ({{…}} and legacy $var).',
                  },
                  weight: { type: 'integer', minimum: 1, default: 1 },
                },
              },
            },
          },
        },
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['rules[].actions[].set_headers.*', 'rules[].actions[].set_labels.*'],
  readsResponseBody: (c: TrafficLabelConfig) =>
    c.rules.some((rule, i) => {
      const values = rule.actions.flatMap((a) => [
        ...Object.values(a.set_headers ?? {}),
        ...Object.values(a.set_labels ?? {}),
      ]);
      if (values.some((v) => mentionsResponseBody(String(v), true))) return true;
      try {
        return (
          rule.match !== undefined && compileCondition(rule.match, `rules[${i}].match`).readsResponseBody
        );
      } catch {
        return false; // create reports the bad expression
      }
    }),
  create(config: TrafficLabelConfig, env) {
    const rules: Rule[] = config.rules.map((rule, i) => {
      const actions = rule.actions.map((action, j) =>
        compileAction(action, `rules[${i}].actions[${j}]`, env),
      );
      return {
        match: rule.match === undefined ? undefined : compileCondition(rule.match, `rules[${i}].match`),
        actions,
        totalWeight: actions.reduce((sum, a) => sum + a.weight, 0),
        cursor: 0,
      };
    });
    return {
      run(ctx) {
        for (const rule of rules) {
          if (rule.match !== undefined && !rule.match.evaluate(ctx)) continue;
          const action = pick(rule);
          // A weight-only action changes nothing and lets the next rule have its turn (APISIX).
          if (action.headers.length === 0 && action.labels.length === 0) continue;
          apply(ctx, action);
          break;
        }
        return 'success';
      },
    };
  },
});

function compileAction(action: ActionConfig, at: string, env: PluginEnv): Action {
  const options = { legacy: true } as const;
  return {
    weight: action.weight,
    headers: Object.entries(action.set_headers ?? {}).map(([name, value]) => [
      name.toLowerCase(),
      env.template(String(value), `${at}.set_headers.${name}`, options),
    ]),
    labels: Object.entries(action.set_labels ?? {}).map(([key, value]) => [
      `label.${key}`,
      env.template(String(value), `${at}.set_labels.${key}`, options),
    ]),
  };
}

function pick(rule: Rule): Action {
  const slot = rule.cursor;
  rule.cursor = (slot + 1) % rule.totalWeight;
  let acc = 0;
  for (const action of rule.actions) {
    acc += action.weight;
    if (slot < acc) return action;
  }
  return rule.actions[rule.actions.length - 1]!;
}

/** Renders every value first, so headers set by this action never feed its own labels. */
function apply(ctx: Context, action: Action): void {
  const headers = action.headers.map(([name, t]) => [name, t.render(ctx)] as const);
  const labels = action.labels.map(([key, t]) => [key, t.render(ctx)] as const);
  for (const [name, value] of headers) ctx.request.headers[name] = value;
  for (const [key, value] of labels) ctx.message[key] = value;
}
