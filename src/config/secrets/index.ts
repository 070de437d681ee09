import type { Logger } from '../../core/logger.js';
import { FileSecretManager } from './file.js';
import type { SecretManager } from './manager.js';
import type { SecretsConfig } from './schema.js';
import { SecretStore } from './store.js';
import { VaultSecretManager } from './vault.js';
import { AwsSecretManager } from './aws.js';
import { GcpSecretManager } from './gcp.js';
import { KubernetesSecretManager } from './kubernetes.js';

export {
  bindSecrets,
  changedSecretReferences,
  mentionsAny,
  replaceSecretReferences,
  secretsOf,
  type SecretLookup,
} from './binding.js';
export { mentionsSecret, referencesWithPaths, secretReferences, type SecretReference } from './reference.js';
export { secretsSchema, type SecretsConfig } from './schema.js';
export { SecretStore, unresolvedSecretIssues } from './store.js';

/** The managers system.yaml `secrets:` declares; undefined without the block. */
export function createSecretStore(
  config: SecretsConfig | undefined,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): SecretStore | undefined {
  if (config === undefined) return undefined;
  const managers: SecretManager[] = [];
  if (config.file !== undefined) managers.push(new FileSecretManager(config.file));
  if (config.vault !== undefined) managers.push(new VaultSecretManager(config.vault, logger));
  if (config.aws !== undefined) managers.push(new AwsSecretManager(config.aws, env));
  if (config.gcp !== undefined) managers.push(new GcpSecretManager(config.gcp, env));
  if (config.kubernetes !== undefined) managers.push(new KubernetesSecretManager(config.kubernetes, env));
  return new SecretStore(managers, logger);
}
