import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ConfigError, definePlugin, READS_FILE } from '../../core/plugin.js';
import { CasbinSourceError, compileEnforcer } from './casbin-enforcer.js';
import { AUTH_OUTPUTS, rejected, requestHeader } from './shared.js';

interface AuthzCasbinConfig {
  model?: string;
  policy?: string;
  model_path?: string;
  policy_path?: string;
  username_header: string;
}

/**
 * Authorizes `(subject, path, method)` with an embedded Casbin enforcer. The
 * model and policy (inline or files) are compiled when the configuration
 * loads; a request costs one synchronous `enforce`.
 *
 * @example
 * ```yaml
 * - id: authz
 *   type: authz-casbin
 *   config:
 *     model_path: casbin/model.conf
 *     policy_path: casbin/policy.csv
 * ```
 */
export const authzCasbin = definePlugin({
  type: 'authz-casbin',
  category: 'auth',
  description: 'Authorize subject, path and method with an embedded Casbin model and policy.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      model: { type: 'string', description: 'Inline Casbin model text; pairs with `policy`.' },
      policy: { type: 'string', description: 'Inline Casbin policy (CSV lines); pairs with `model`.' },
      model_path: {
        type: 'string',
        minLength: 1,
        [READS_FILE]: true,
        description: 'Model file, relative to gateway.yaml; pairs with `policy_path`.',
      },
      policy_path: {
        type: 'string',
        minLength: 1,
        [READS_FILE]: true,
        description: 'Policy CSV file, relative to gateway.yaml; pairs with `model_path`.',
      },
      username_header: {
        type: 'string',
        minLength: 1,
        default: 'x-user',
        description: 'Subject header when no consumer is attached.',
      },
    },
  },
  outputs: AUTH_OUTPUTS,
  // Casbin sources are never templates (docs/plugins/authz-casbin.md).
  templated: [],
  create(config: AuthzCasbinConfig, env) {
    const [modelText, policyText, keys] = sources(config, env.configDir);
    let enforcer;
    try {
      enforcer = compileEnforcer(modelText, policyText);
      // A matcher that does not compile, or a request definition other than (sub, obj, act), fails here.
      enforcer.enforceSync('', '', '');
    } catch (err) {
      if (err instanceof CasbinSourceError) throw new ConfigError(keys[err.field], err.message);
      throw new ConfigError(keys.model, `invalid Casbin model: ${(err as Error).message}`);
    }
    const header = config.username_header.toLowerCase();

    return {
      run(ctx) {
        const subject = ctx.consumer?.name ?? requestHeader(ctx, header) ?? 'anonymous';
        if (enforcer.enforceSync(subject, ctx.request.path, ctx.request.method)) return 'success';
        return rejected(ctx, 403, 'Access Denied');
      },
    };
  },
});

/** The model and policy text, and the config keys they came from (for error paths). */
function sources(
  config: AuthzCasbinConfig,
  configDir: string | undefined,
): [string, string, { model: string; policy: string }] {
  const inline = config.model !== undefined || config.policy !== undefined;
  const files = config.model_path !== undefined || config.policy_path !== undefined;
  if (inline && files) {
    throw new ConfigError('model', 'set either model + policy or model_path + policy_path, not both');
  }
  if (files) {
    if (config.model_path === undefined) throw new ConfigError('model_path', 'is required with policy_path');
    if (config.policy_path === undefined) throw new ConfigError('policy_path', 'is required with model_path');
    return [
      readSource(config.model_path, configDir, 'model_path'),
      readSource(config.policy_path, configDir, 'policy_path'),
      { model: 'model_path', policy: 'policy_path' },
    ];
  }
  if (config.model === undefined || config.model.trim() === '') {
    throw new ConfigError('model', 'is required: set model + policy or model_path + policy_path');
  }
  if (config.policy === undefined) throw new ConfigError('policy', 'is required with model');
  return [config.model, config.policy, { model: 'model', policy: 'policy' }];
}

function readSource(path: string, configDir: string | undefined, key: string): string {
  const full = isAbsolute(path) || configDir === undefined ? path : resolve(configDir, path);
  try {
    return readFileSync(full, 'utf8');
  } catch (err) {
    throw new ConfigError(key, `cannot read '${full}': ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}
