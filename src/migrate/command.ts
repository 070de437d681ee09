import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { acmeStoreIssues } from '../acme/index.js';
import { compileWith } from '../gateway.js';
import { silentLogger } from '../core/logger.js';
import { parseGatewayConfig } from '../config/gateway.js';
import { migrateGatewayText } from './migrate.js';
import { ConfigRejected } from '../config/schema-validate.js';
import { loadSystemConfig, type SystemConfig } from '../config/system.js';

export interface MigrateArgs {
  gatewayPath: string;
  systemPath: string;
  systemGiven: boolean;
  write: boolean;
  dropUnknownKeys: boolean;
}

/**
 * `switchyard migrate`: the migrated YAML on stdout (or into the file with
 * `--write`, keeping `<file>.bak`), one line per change on stderr. Exit 0 when
 * the result validates, 1 with the remaining errors, 2 when the file cannot be read.
 */
export function runMigrate(args: MigrateArgs): number {
  let text: string;
  try {
    text = readFileSync(args.gatewayPath, 'utf8');
  } catch (err) {
    process.stderr.write(`cannot read ${args.gatewayPath}: ${(err as Error).message}\n`);
    return 2;
  }
  const result = migrateGatewayText(text, {
    env: process.env,
    gatewayPath: args.gatewayPath,
    dropUnknownKeys: args.dropUnknownKeys,
  });
  const errors = result.errors.map((i) => `${args.gatewayPath}: ${prefix(i.path, i.message)}${i.message}`);
  let system: SystemConfig | undefined;
  if (args.systemGiven) {
    try {
      system = loadSystemConfig(args.systemPath);
    } catch (err) {
      if (!(err instanceof ConfigRejected)) throw err;
      errors.push(...err.issues.map((i) => `${args.systemPath}: ${prefix(i.path, i.message)}${i.message}`));
    }
  }
  if (system !== undefined && result.errors.length === 0)
    errors.push(...storeIssues(result.text, system, args));

  for (const change of result.changes) process.stderr.write(`changed: ${change}\n`);
  for (const note of result.undecided) process.stderr.write(`undecided: ${note}\n`);
  if (result.changes.length === 0) process.stderr.write('no changes\n');
  if (args.write) {
    if (result.changes.length > 0) {
      copyFileSync(args.gatewayPath, `${args.gatewayPath}.bak`);
      const tmp = `${args.gatewayPath}.migrate-${process.pid}.tmp`;
      writeFileSync(tmp, result.text);
      renameSync(tmp, args.gatewayPath);
      process.stderr.write(`wrote ${args.gatewayPath} (previous version kept as ${args.gatewayPath}.bak)\n`);
    }
  } else {
    process.stdout.write(result.text);
  }
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`error: ${e}\n`);
    process.stderr.write(`${errors.length} error(s) remain after migrate\n`);
    return 1;
  }
  process.stderr.write('the migrated configuration is valid\n');
  return 0;
}

function prefix(path: string, message: string): string {
  return message.includes(path) || path === '' ? '' : `${path}: `;
}

/** The cross-file check `validate` does: ACME storage naming a store of the gateway file. */
function storeIssues(text: string, system: SystemConfig, args: MigrateArgs): string[] {
  const runtime = compileWith(parseGatewayConfig(text), silentLogger, process.env, args.gatewayPath);
  const issues = acmeStoreIssues(system, runtime.stores.names).map((i) => `${args.systemPath}: ${i.message}`);
  void runtime.close();
  return issues;
}
