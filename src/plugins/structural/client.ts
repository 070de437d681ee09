import { definePlugin } from '../../core/plugin.js';

/** Graph exit: reaching it sends `ctx.response` to the caller. Fan-in from any number of ports. */
export const client = definePlugin({
  type: 'client',
  category: 'structural',
  description: 'Exit of the policy graph; the prepared response is sent to the caller.',
  schema: { type: 'object', additionalProperties: false, properties: {} },
  noErrorPort: true,
  readsRequestBody: false,
  outputs: {},
  create() {
    return { run: () => 'success' as never };
  },
});
