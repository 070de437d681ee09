import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from '../../core/logger.js';
import type { ConfigIssue } from '../schema-validate.js';
import { bindSecrets, replaceSecretReferences } from './binding.js';
import { createSecretStore } from './index.js';
import type { SecretsConfig } from './schema.js';
import { referencesWithPaths } from './reference.js';
import type { SecretStore } from './store.js';
import { SecretError } from './manager.js';

/**
 * At start (`switchyard` and `switchyard validate`): the store of system.yaml `secrets:`, bound to
 * `env`, with every reference of system.yaml (outside `secrets:`) and of gateway.yaml read. The
 * references of system.yaml are replaced in `system` itself (its values are read once, at start);
 * those that did not resolve are returned as issues named by key path. gateway.yaml's are
 * checked by the compiler, which names its own.
 */
export async function loadSecrets(
  system: { secrets?: SecretsConfig },
  logger: Logger,
  gatewayPath: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ store: SecretStore | undefined; issues: ConfigIssue[] }> {
  let store: SecretStore | undefined;
  try {
    store = createSecretStore(system.secrets, logger, env);
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    // A manager that cannot start (`secrets.gcp needs credentials_file …`): named by its key.
    const key = /^(secrets\.[a-z]+)/.exec(err.message)?.[1] ?? 'secrets';
    return {
      store: undefined,
      issues: [{ path: key, message: err.message.replace(/^secrets\.[a-z]+:? /, '') }],
    };
  }
  bindSecrets(env, store);
  const { secrets: _managers, ...rest } = system;
  const inSystem = referencesWithPaths(rest);
  if (store !== undefined) {
    await store.prepare(rest);
    if (gatewayPath !== undefined && existsSync(gatewayPath)) {
      let text: string | undefined;
      try {
        text = readFileSync(gatewayPath, 'utf8');
      } catch {
        // The gateway's own read reports it.
      }
      if (text !== undefined) await store.prepare(text);
    }
  }
  const issues: ConfigIssue[] = [];
  for (const { path, reference } of inSystem) {
    if (store?.value(reference.text) !== undefined) continue;
    const why = store === undefined ? 'system.yaml declares no secrets managers' : store.problem(reference);
    issues.push({ path, message: `secret reference ${reference.text} cannot be resolved: ${why}` });
  }
  if (issues.length === 0 && inSystem.length > 0)
    for (const key of Object.keys(rest)) replaceInPlace(system, key, env);
  return { store, issues };
}

function replaceInPlace(parent: object, key: string, env: NodeJS.ProcessEnv): void {
  const record = parent as Record<string, unknown>;
  const v = record[key];
  if (typeof v === 'string') record[key] = replaceSecretReferences(v, env);
  else if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) replaceInPlace(v, k, env);
}
