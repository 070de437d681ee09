import { setTimeout as sleep } from 'node:timers/promises';
import type { Condition } from '../../conditions/index.js';
import type { Context } from '../../core/context.js';
import { compileVarsGate } from '../condition-vars.js';
import { ConfigError, definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { headerListSchema, headerPairs, type HeaderListConfig } from '../shared-schemas.js';

interface Gating {
  percentage?: number;
  vars?: unknown[];
}

interface FaultInjectionConfig {
  abort?: Gating & { http_status: number; body?: string; headers?: HeaderListConfig };
  delay?: Gating & { duration: number };
}

type FaultPort = 'success' | 'abort';

const gatingSchema = {
  percentage: {
    type: 'integer',
    minimum: 0,
    maximum: 100,
    description: 'Chance (%) that the fault triggers; absent = always.',
  },
  vars: {
    type: 'array',
    description: 'List of condition expressions, any of which must hold (docs/conditions.md).',
  },
} as const;

/** Decides, per request, whether one fault applies: the percentage draw and the `vars` gate must both pass. */
type Gate = (ctx: Context) => boolean;

function compileGate(gating: Gating, key: string): Gate {
  const percentage = gating.percentage;
  const vars: Condition | undefined =
    gating.vars === undefined ? undefined : compileVarsGate(gating.vars, `${key}.vars`);
  const sampled = (): boolean =>
    percentage === undefined || percentage >= 100 ? true : percentage > 0 && Math.random() * 100 < percentage;
  if (vars === undefined) return sampled;
  return (ctx) => sampled() && vars.evaluate(ctx);
}

/** Injects a delay and/or an abort response, each gated by a percentage and `vars` conditions. */
export const faultInjection = definePlugin({
  type: 'fault-injection',
  category: 'traffic',
  description:
    'Inject a delay and/or an abort response, each gated by a percentage and condition expressions (chaos testing).',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      abort: {
        type: 'object',
        additionalProperties: false,
        required: ['http_status'],
        properties: {
          http_status: {
            type: 'integer',
            minimum: 200,
            maximum: 599,
            description: 'Status of the injected response.',
          },
          body: { type: 'string', description: 'Body; templated with {{…}} and legacy $var.' },
          headers: {
            ...headerListSchema,
            description: 'Headers; values templated with {{…}} and legacy $var.',
          },
          ...gatingSchema,
        },
      },
      delay: {
        type: 'object',
        additionalProperties: false,
        required: ['duration'],
        properties: {
          duration: { type: 'number', minimum: 0, description: 'Seconds to wait (fractions allowed).' },
          ...gatingSchema,
        },
      },
    },
  },
  outputs: {
    success: { kind: 'success', description: 'No abort: the request goes on (possibly delayed).' },
    abort: { kind: 'outcome', description: 'An injected fault response is prepared; wire to client.' },
  },
  templated: ['abort.body', 'abort.headers.*'],
  readsResponseBody: (c: FaultInjectionConfig) => {
    try {
      return [c.abort?.vars, c.delay?.vars].some(
        (v) => v !== undefined && compileVarsGate(v, 'vars').readsResponseBody,
      );
    } catch {
      return false; // create reports the bad expression
    }
  },
  create(config: FaultInjectionConfig, env) {
    if (config.abort === undefined && config.delay === undefined) {
      throw new ConfigError('', "at least one of 'abort' or 'delay' is required");
    }
    const abort = config.abort === undefined ? undefined : compileAbort(config.abort, env);
    const delay = config.delay;
    if (delay === undefined) return { run: (ctx): FaultPort => abort?.(ctx) ?? 'success' };

    const delayGate = compileGate(delay, 'delay');
    const delayMs = delay.duration * 1000;
    return {
      run(ctx): FaultPort | Promise<FaultPort> {
        // As in APISIX, the delay comes first and the abort is decided after it.
        if (delayMs === 0 || !delayGate(ctx)) return abort?.(ctx) ?? 'success';
        return sleep(delayMs, undefined, { signal: ctx.signal })
          .catch(() => undefined)
          .then(() => abort?.(ctx) ?? 'success');
      },
    };
  },
});

/** Returns 'abort' with the response prepared, or undefined when the abort does not trigger. */
function compileAbort(
  abort: NonNullable<FaultInjectionConfig['abort']>,
  env: PluginEnv,
): (ctx: Context) => 'abort' | undefined {
  const gate = compileGate(abort, 'abort');
  const options = { legacy: true } as const;
  const body: Template | undefined =
    abort.body === undefined ? undefined : env.template(abort.body, 'abort.body', options);
  const headers = headerPairs(abort.headers).map(([name, value]): [string, Template] => [
    name,
    env.template(value, `abort.headers.${name}`, options),
  ]);
  const status = abort.http_status;
  return (ctx) => {
    if (!gate(ctx)) return undefined;
    const res = ctx.response;
    res.status = status;
    res.setBody(body === undefined ? '' : body.render(ctx));
    delete res.headers['content-encoding'];
    for (const [name, value] of headers) res.headers[name] = value.render(ctx);
    return 'abort';
  };
}
