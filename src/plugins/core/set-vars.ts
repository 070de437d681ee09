import { ConfigError, definePlugin, type PluginEnv, type Template } from '../../core/plugin.js';
import { mentionsResponseBody } from '../response-body-refs.js';

type Scalar = string | number | boolean;

interface VarEntry {
  name: string;
  value?: Scalar;
  from?: Scalar;
}

interface SetVarsConfig {
  vars: Record<string, Scalar> | VarEntry[];
}

const NAME = /^[A-Za-z0-9_.-]+$/;

const scalar = { type: ['string', 'number', 'boolean'] } as const;

/**
 * Renders named templates against the context as it entered the node, then
 * writes every result to `ctx.message.<name>`: entries never see each other.
 */
export const setVars = definePlugin({
  type: 'set-vars',
  category: 'core',
  description: 'Compute named values from templates and store them in context.message for later nodes.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['vars'],
    properties: {
      vars: {
        description:
          'Map {name: template} or list [{name, value}] ({{…}} only) / [{name, from}] ({{…}} and legacy $var).',
        anyOf: [
          { type: 'object', minProperties: 1, additionalProperties: scalar },
          {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name'],
              properties: { name: { type: 'string' }, value: scalar, from: scalar },
            },
          },
        ],
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['vars.*', 'vars[].value', 'vars[].from'],
  readsResponseBody: (c: SetVarsConfig) =>
    Array.isArray(c.vars)
      ? c.vars.some((v) => mentionsResponseBody(String(v.from ?? v.value ?? ''), v.from !== undefined))
      : Object.values(c.vars).some((v) => mentionsResponseBody(String(v), false)),
  create(config: SetVarsConfig, env) {
    const entries = compileVars(config.vars, env);
    const names = entries.map(([name]) => name);
    const templates = entries.map(([, template]) => template);
    const values: string[] = new Array<string>(entries.length);
    return {
      run(ctx) {
        for (let i = 0; i < templates.length; i++) values[i] = templates[i]!.render(ctx);
        const message = ctx.message;
        for (let i = 0; i < names.length; i++) message[names[i]!] = values[i];
        return 'success';
      },
    };
  },
});

function compileVars(vars: SetVarsConfig['vars'], env: PluginEnv): [string, Template][] {
  const list: { name: string; text: Scalar | undefined; legacy: boolean; at: string }[] = Array.isArray(vars)
    ? vars.map((entry, i) => {
        if (entry.value !== undefined && entry.from !== undefined) {
          throw new ConfigError(`vars[${i}]`, "set either 'value' or 'from', not both");
        }
        const legacy = entry.from !== undefined;
        return { name: entry.name, text: entry.from ?? entry.value, legacy, at: `vars[${i}]` };
      })
    : Object.entries(vars).map(([name, text]) => ({ name, text, legacy: false, at: `vars.${name}` }));

  const seen = new Set<string>();
  return list.map(({ name, text, legacy, at }) => {
    if (name === '') throw new ConfigError(at, 'needs a non-empty name');
    if (name.startsWith('__')) throw new ConfigError(at, `name '${name}' uses the reserved '__' prefix`);
    if (!NAME.test(name)) throw new ConfigError(at, `name '${name}' may only use A-Z a-z 0-9 _ . -`);
    if (seen.has(name)) throw new ConfigError(at, `duplicate name '${name}'`);
    seen.add(name);
    if (text === undefined) throw new ConfigError(at, `variable '${name}' has no value`);
    // Rendered where the node sits: after an upstream, response fields hold the real response.
    return [name, env.template(String(text), at, { legacy, phase: 'response' })];
  });
}
