import { definePlugin } from '../../core/plugin.js';

/** Graph entry point: the server hands the request context to the target of its success edge. */
export const listener = definePlugin({
  type: 'listener',
  category: 'structural',
  description: 'Entry point of the policy graph; emits the request context built by the server.',
  schema: { type: 'object', additionalProperties: false, properties: {} },
  input: null,
  noErrorPort: true,
  readsRequestBody: false,
  outputs: { success: { kind: 'success', description: 'Entry into the policy pipeline.' } },
  create() {
    return { run: () => 'success' as const };
  },
});
