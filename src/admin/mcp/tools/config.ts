import { dryRun, listOf, putItem } from '../../resources.js';
import { validatePolicy } from '../../validate-policy.js';
import { ConfigRejected } from '../../../config/schema-validate.js';
import { issueLines, notFound, toToolError } from '../errors.js';
import { maskSecrets } from '../secrets.js';
import { definition, requiredStr, str } from './args.js';
import { adminKind, TOOL_KINDS, type ToolKind } from './kinds.js';
import { NAME_ARG, NO_ARGS, type InputSchema, type ToolDef } from './types.js';

const DESCRIBE: Record<string, { list: string; get: string }> = {
  routes: {
    list: 'All routes in list order: name, match rule (path, methods, hosts, headers), priority and the policy each one runs. Routes are tried by priority (higher first, default 0), then in list order; the first match wins.',
    get: 'One route by name: its match rule and the policy it runs.',
  },
  policies: {
    list: 'All policies: node graphs of plugin nodes wired port to port.',
    get: 'One policy by name, with `referenced_by` (the routes that run it), so you see what a change affects.',
  },
  supernodes: {
    list: 'All supernodes: reusable subgraphs with input/output boundary nodes, used in policies as `type: supernode`.',
    get: 'One supernode by name, with `referenced_by` (the policy nodes that use it).',
  },
  plugin_configs: {
    list: 'All shared plugin configs: named, typed config profiles that nodes reference with `config_ref`.',
    get: 'One shared plugin config by name, with `referenced_by`.',
  },
  stores: {
    list: 'All key-value stores (redis/valkey) that plugins, sessions and caches name with `store:`. `${ENV}` placeholders stay unresolved; secrets are <redacted>.',
    get: 'One store by name, with `referenced_by`.',
  },
  global_rules: {
    list: 'All global rules, in the order they run: each names a supernode spliced right after the listener of every policy, or with `phase: response` before every client node (policies with `global_rules: false` opt out). Trace node ids are `global:<rule>/<inner node>` (response rules: `global:<rule>@<client>`).',
    get: 'One global rule by name: its supernode and params.',
  },
  consumers: {
    list: 'All API consumers: name, group, labels and credential kinds; credential values are <redacted>.',
    get: 'One consumer by name; credential values are <redacted>.',
  },
};

function readTools(kind: ToolKind): ToolDef[] {
  const text = DESCRIBE[kind.section] as { list: string; get: string };
  return [
    {
      name: `list_${kind.plural}`,
      scope: 'read',
      description: text.list,
      inputSchema: NO_ARGS,
      run: (_args, ctx) => ({
        [kind.plural]: maskSecrets(listOf(ctx.gateway.runtime.config, kind.section), ctx.redaction),
      }),
    },
    {
      name: `get_${kind.singular}`,
      scope: 'read',
      description: text.get,
      inputSchema: NAME_ARG,
      run: (args, ctx) => {
        const name = requiredStr(args, 'name');
        const config = ctx.gateway.runtime.config;
        const item = listOf(config, kind.section).find((i) => i.name === name);
        if (item === undefined) throw notFound(kind.singular, name);
        const shown = maskSecrets(item, ctx.redaction);
        return kind.referencedBy === undefined
          ? shown
          : { ...shown, referenced_by: kind.referencedBy(ctx.gateway, config, name) };
      },
    },
  ];
}

const definitionSchema = (key: string, what: string): InputSchema => ({
  type: 'object',
  properties: {
    [key]: {
      type: ['object', 'string'],
      description: `The ${what} as a JSON object or a YAML string. Not saved.`,
    },
    definition: { type: ['object', 'string'], description: `Alias of \`${key}\`.` },
    name: { type: 'string', description: `Name to validate under (replaces a stored ${what} of that name).` },
  },
  additionalProperties: false,
});

const validateTools: ToolDef[] = [
  {
    name: 'validate_policy',
    // Compiling runs plugin setup, including a script's top-level Lua: not a read.
    scope: 'write',
    description:
      'Compile an unsaved policy against the live configuration (replacing a stored policy of the same name) and throw the result away. Returns {valid, errors, warnings, cache_pairs, buffering, details}: port wiring, every node config, config_ref and store names. Nothing is saved; call put_policy with the same definition afterwards.',
    inputSchema: definitionSchema('policy', 'policy'),
    run: (args, ctx) => {
      const policy = definition(args, ['policy', 'definition']);
      const name = str(args, 'name');
      if (name !== undefined) policy['name'] = name;
      return validatePolicy(ctx.gateway, policy);
    },
  },
  {
    name: 'validate_supernode',
    scope: 'write',
    description:
      'Check an unsaved supernode definition: boundary nodes (input, output), inner wiring and node configs, compiled together with the live configuration (and every policy already using a supernode of that name). Returns {valid, errors, warnings}. Nothing is saved.',
    inputSchema: definitionSchema('supernode', 'supernode'),
    run: async (args, ctx) => {
      const body = definition(args, ['supernode', 'definition']);
      const name =
        str(args, 'name') ?? (typeof body['name'] === 'string' ? body['name'] : 'unsaved-supernode');
      const kind = adminKind(ctx.gateway, 'supernodes');
      try {
        const warnings = await dryRun(ctx.gateway, (draft) => {
          putItem(draft, kind, { ...body, name }, { upsert: true });
        });
        return { valid: true, errors: [], warnings };
      } catch (err) {
        if (err instanceof ConfigRejected)
          return { valid: false, errors: issueLines(err.issues), warnings: [], details: err.issues };
        throw toToolError(err);
      }
    },
  },
];

/** Reads of every named section, then the validators. */
export const configTools: ToolDef[] = [...TOOL_KINDS.flatMap(readTools), ...validateTools];
