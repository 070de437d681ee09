import { NodeError, customErrorCode } from '../../src/core/errors.js';
import { definePlugin, type PluginDefinition } from '../../src/core/plugin.js';
import { registry } from '../../src/plugins/index.js';

/**
 * Small plugin types used only by engine tests: they exercise port kinds and
 * failure paths the compiler and run loop must handle, independent of any real plugin.
 */
export const gate = definePlugin({
  type: 'test-gate',
  category: 'test',
  description: 'Leaves through denied when the request has header x-deny, else success.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: { status: { type: 'integer', default: 403 } },
  },
  outputs: { success: { kind: 'success' }, denied: { kind: 'outcome' } },
  create(config: { status: number }) {
    return {
      run(ctx) {
        if (ctx.request.headers['x-deny'] === undefined) return 'success';
        ctx.response.json(config.status, { error: 'denied' });
        return 'denied';
      },
    };
  },
});

export const failing = definePlugin({
  type: 'test-fail',
  category: 'test',
  description: 'Always fails with the configured code; async when async: true.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      code: { type: 'string', default: 'TEST_FAILURE' },
      async: { type: 'boolean', default: false },
    },
  },
  outputs: { success: { kind: 'success' } },
  create(config) {
    const fail = (): never => {
      throw new NodeError(customErrorCode(config.code), 'test node failed', { status: 503 });
    };
    return { run: config.async ? () => Promise.resolve().then(fail) : fail };
  },
});

export const tagger = definePlugin({
  type: 'test-tag',
  category: 'test',
  description: 'Appends its tag to response header x-trail; async when async: true.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['tag'],
    properties: {
      tag: { type: 'string' },
      async: { type: 'boolean', default: false },
      port: { type: 'integer' },
    },
  },
  outputs: { success: { kind: 'success' } },
  readsResponseBody: (c: { tag: string }) => c.tag === 'reads-body',
  create(config: { tag: string; async: boolean }) {
    return {
      run(ctx) {
        const prev = ctx.response.headers['x-trail'];
        ctx.response.headers['x-trail'] = prev === undefined ? config.tag : `${String(prev)},${config.tag}`;
        return config.async ? Promise.resolve('success' as const) : 'success';
      },
    };
  },
});

export const fetcher = definePlugin({
  type: 'test-fetch',
  category: 'test',
  description: 'Pretends to fetch a response: a relaying node for streaming inference.',
  schema: { type: 'object', properties: {} },
  outputs: { success: { kind: 'success' } },
  relaysResponse: true,
  create() {
    return { run: () => 'success' as const };
  },
});

type AnyPlugin = PluginDefinition<never, string>;

/** The real registry plus the test types above. */
export const testRegistry: ReadonlyMap<string, AnyPlugin> = new Map([
  ...registry,
  ...[gate, failing, tagger, fetcher].map((d) => [d.type, d as unknown as AnyPlugin] as const),
]);
