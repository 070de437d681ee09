import { compileCondition } from '../../conditions/index.js';
import { ConfigError, definePlugin } from '../../core/plugin.js';

/** Branches the graph on a condition expression; never changes the request or response. */
export const condition = definePlugin({
  type: 'condition',
  category: 'flow',
  description:
    'Branch the policy on a condition expression: the request leaves through true or false, unchanged.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['conditions'],
    properties: {
      conditions: {
        type: 'array',
        minItems: 1,
        description: 'One condition expression (rules ANDed, nested AND/OR/NOT groups; docs/conditions.md).',
      },
    },
  },
  outputs: {
    true: { kind: 'outcome', description: 'The conditions evaluated to true.' },
    false: { kind: 'outcome', description: 'The conditions evaluated to false.' },
  },
  readsResponseBody: (c) => {
    try {
      return compileCondition(c.conditions, 'conditions').readsResponseBody;
    } catch {
      return false; // create reports the bad expression
    }
  },
  create(config) {
    if (config.conditions.length === 0) throw new ConfigError('conditions', 'must hold at least one rule');
    const test = compileCondition(config.conditions, 'conditions');
    return { run: (ctx) => (test.evaluate(ctx) ? 'true' : 'false') };
  },
});
