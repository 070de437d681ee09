import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { canonicalConfig } from '../config/canonical.js';
import { diffConfigs, formatChanges, type ResourceChange } from '../config/config-diff.js';
import { loadGatewayConfig, parseGatewayConfig, type GatewayConfig } from '../config/gateway.js';
import { ConfigRejected, formatIssues } from '../config/schema-validate.js';
import {
  ADMIN_OPTIONS,
  adminRequest,
  adminTarget,
  CommandError,
  errorText,
  type AdminTarget,
} from './admin-client.js';

/**
 * `switchyard dump`, `diff` and `apply` (docs/config-as-code.md). Exit codes: 0 success or no
 * difference, 1 differences (diff, apply --dry-run), 2 errors (credentials, an unreachable
 * gateway, an unreadable or unparsable file, a concurrent change).
 */
export async function runConfigCommand(command: 'dump' | 'diff' | 'apply', argv: string[]): Promise<number> {
  try {
    if (command === 'dump') return await dump(argv);
    if (command === 'diff') return await diff(argv);
    return await apply(argv);
  } catch (err) {
    if (err instanceof CommandError || err instanceof TypeError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

function readConfigFile(path: string): GatewayConfig {
  try {
    return loadGatewayConfig(path);
  } catch (err) {
    if (err instanceof ConfigRejected) throw new CommandError(`${path}: ${formatIssues(err.issues)}`);
    throw err;
  }
}

/** The running configuration (canonical YAML) and its ETag. */
async function running(target: AdminTarget): Promise<{ text: string; etag: string; config: GatewayConfig }> {
  const answer = await adminRequest(target, 'GET', '/api/config');
  if (answer.status !== 200)
    throw new CommandError(`GET /api/config: ${answer.status} ${errorText(answer.text)}`);
  let config: GatewayConfig;
  try {
    config = parseGatewayConfig(answer.text);
  } catch (err) {
    if (err instanceof ConfigRejected) throw new CommandError(`GET /api/config: ${formatIssues(err.issues)}`);
    throw err;
  }
  return { text: answer.text, etag: answer.headers.get('etag') ?? '', config };
}

async function dump(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: { ...ADMIN_OPTIONS, output: { type: 'string', short: 'o' } },
  });
  const { text } = await running(adminTarget(values));
  if (values.output === undefined) process.stdout.write(text);
  else writeFileSync(values.output, text);
  return 0;
}

async function diff(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: { ...ADMIN_OPTIONS, 'gateway-config': { type: 'string' } },
  });
  let before: GatewayConfig;
  let after: GatewayConfig;
  if (positionals.length === 2) {
    before = readConfigFile(positionals[0] as string);
    after = readConfigFile(positionals[1] as string);
  } else if (positionals.length === 0 && values['gateway-config'] !== undefined) {
    after = readConfigFile(values['gateway-config']);
    before = (await running(adminTarget(values))).config;
  } else
    throw new CommandError(
      'diff needs --gateway-config <file> (against the running gateway) or two files A B',
    );
  const changes = diffConfigs(before, after);
  process.stdout.write(formatChanges(changes));
  return changes.length > 0 ? 1 : 0;
}

const summaryLine = (changes: readonly ResourceChange[]): string => {
  const count = (kind: ResourceChange['kind']) => changes.filter((c) => c.kind === kind).length;
  return `${count('added')} added, ${count('changed')} changed, ${count('removed')} removed`;
};

async function apply(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      ...ADMIN_OPTIONS,
      'gateway-config': { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      'if-match': { type: 'string' },
    },
  });
  const path = values['gateway-config'];
  if (path === undefined) throw new CommandError('apply needs --gateway-config <file>');
  const wanted = readConfigFile(path);
  const target = adminTarget(values);
  // The ETag read now guards the write: a change made meanwhile makes it fail with nothing applied.
  const current = await running(target);
  const etag = values['if-match'] ?? current.etag;
  const body = canonicalConfig(wanted);
  const checked = await adminRequest(target, 'PUT', '/api/config?dry_run=true', {
    json: body,
    headers: { 'if-match': etag },
  });
  if (checked.status === 412) return concurrentChange();
  if (checked.status !== 200) throw new CommandError(`${path} is not valid: ${errorText(checked.text)}`);
  for (const warning of (JSON.parse(checked.text) as { warnings?: string[] }).warnings ?? [])
    process.stderr.write(`warning: ${warning}\n`);
  const changes = diffConfigs(current.config, wanted);
  process.stdout.write(
    changes
      .map((c) => `${c.kind === 'added' ? '+' : c.kind === 'removed' ? '-' : '~'} ${c.section}/${c.name}\n`)
      .join(''),
  );
  if (values['dry-run']) {
    process.stdout.write(`dry run: ${summaryLine(changes)}; nothing applied\n`);
    return changes.length > 0 ? 1 : 0;
  }
  const applied = await adminRequest(target, 'PUT', '/api/config', {
    json: body,
    headers: { 'if-match': etag },
  });
  if (applied.status === 412) return concurrentChange();
  if (applied.status !== 200)
    throw new CommandError(`apply failed: ${applied.status} ${errorText(applied.text)}`);
  const result = JSON.parse(applied.text) as { version: number | null; sha256: string };
  process.stdout.write(
    `applied: ${summaryLine(changes)}; version ${result.version ?? '?'} (sha256 ${result.sha256})\n`,
  );
  return 0;
}

function concurrentChange(): number {
  process.stderr.write(
    'error: the running configuration changed since it was read (If-Match failed); nothing applied\n',
  );
  return 2;
}
