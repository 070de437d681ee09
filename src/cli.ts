import { parseArgs } from 'node:util';
import { ConfigRejected, formatIssues } from './config/schema-validate.js';
import { loadSystemConfig } from './config/system.js';
import { loadGatewayConfig } from './config/gateway.js';
import { createLogger, silentLogger } from './observability/logger.js';
import { Gateway, compileWith, type ApplySource } from './gateway.js';
import type { Runtime } from './engine/compile.js';
import { closeAllPools } from './outbound/pool-registry.js';
import { startAdminServer, type AdminServer } from './admin/server.js';
import { EtcdConfigSource } from './config/etcd-source.js';
import { EtcdUnavailable } from './config/etcd-client.js';
import { registerStreamMetrics } from './observability/stream-metrics.js';
import { acmeStoreIssues } from './acme/index.js';
import { closeStreamListeners, startStreamListeners, type StreamListener } from './stream/index.js';
import { runMigrate } from './config/migrate-command.js';
import { isClusterWorker, resolveWorkers, runClusterWorker, ClusterPrimary } from './cluster/index.js';

const USAGE = `Usage:
  switchyard [--system-config <path>] [--gateway-config <path>]
  switchyard validate [--system-config <path>] [--gateway-config <path>]
  switchyard migrate --gateway-config <path> [--system-config <path>] [--write] [--drop-unknown-keys]

Defaults: --system-config config/system.yaml, --gateway-config config/gateway.yaml`;

interface CliArgs {
  command: 'run' | 'validate' | 'migrate';
  systemPath: string;
  gatewayPath: string;
  /** Whether --system-config was given (migrate checks the system file only then). */
  systemGiven: boolean;
  /** migrate: replace the gateway file (keeping `<file>.bak`) instead of printing. */
  write: boolean;
  /** migrate: remove node-config keys the schema does not declare. */
  dropUnknownKeys: boolean;
}

function parseCli(argv: string[]): CliArgs {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      'system-config': { type: 'string', default: 'config/system.yaml' },
      'gateway-config': { type: 'string', default: 'config/gateway.yaml' },
      help: { type: 'boolean', short: 'h', default: false },
      write: { type: 'boolean', default: false },
      'drop-unknown-keys': { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const command = positionals[0] ?? 'run';
  if (positionals.length > 1 || (command !== 'run' && command !== 'validate' && command !== 'migrate')) {
    throw new TypeError(`unknown command '${positionals.join(' ')}'`);
  }
  if (
    command === 'migrate' &&
    !argv.some((a) => a === '--gateway-config' || a.startsWith('--gateway-config='))
  )
    throw new TypeError('migrate needs --gateway-config <path>');
  if ((values.write || values['drop-unknown-keys']) && command !== 'migrate')
    throw new TypeError('--write and --drop-unknown-keys are options of migrate only');
  return {
    command,
    systemPath: values['system-config'],
    systemGiven: argv.some((a) => a === '--system-config' || a.startsWith('--system-config=')),
    gatewayPath: values['gateway-config'],
    write: values.write,
    dropUnknownKeys: values['drop-unknown-keys'],
  };
}

/** `switchyard validate`: every problem of both files with its path; exit 1 on any. */
function validate(args: CliArgs): number {
  const problems: string[] = [];
  let system;
  try {
    system = loadSystemConfig(args.systemPath);
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    problems.push(...err.issues.map((i) => `${args.systemPath}: ${i.path ? `${i.path}: ` : ''}${i.message}`));
  }
  try {
    const runtime = compileWith(
      loadGatewayConfig(args.gatewayPath),
      silentLogger,
      process.env,
      args.gatewayPath,
    );
    for (const warning of runtime.warnings) process.stdout.write(`warning: ${warning}\n`);
    if (system !== undefined)
      problems.push(
        ...acmeStoreIssues(system, runtime.stores.names).map((i) => `${args.systemPath}: ${i.message}`),
      );
    void runtime.close();
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    problems.push(
      ...err.issues.map(
        (i) =>
          `${args.gatewayPath}: ${i.message.includes(i.path) || i.path === '' ? '' : `${i.path}: `}${i.message}`,
      ),
    );
  }
  if (problems.length > 0) {
    for (const p of problems) process.stderr.write(`error: ${p}\n`);
    process.stderr.write(`${problems.length} error(s)\n`);
    return 1;
  }
  process.stdout.write('configuration is valid\n');
  return 0;
}

async function run(args: CliArgs): Promise<number> {
  // `workers`: a forked worker takes its configuration from the primary (docs/workers.md).
  if (isClusterWorker()) return runClusterWorker();
  let system;
  try {
    system = loadSystemConfig(args.systemPath);
  } catch (err) {
    if (err instanceof ConfigRejected) {
      process.stderr.write(`${args.systemPath}: invalid system config\n${formatIssues(err.issues)}\n`);
      return 1;
    }
    throw err;
  }
  const logger = createLogger(system.logging);
  const workers = resolveWorkers(system.workers);
  let cluster: ClusterPrimary | undefined;
  const onApplied = (runtime: Runtime, source: ApplySource): Promise<void> =>
    cluster?.broadcast(runtime.config, source) ?? Promise.resolve();
  let gateway: Gateway;
  try {
    const etcd = system.config.etcd;
    gateway =
      system.config.source === 'file' || etcd === undefined
        ? Gateway.create({ system, gatewayPath: args.gatewayPath, logger, onApplied })
        : await Gateway.createFromEtcd({
            system,
            gatewayPath: args.gatewayPath,
            logger,
            etcd: new EtcdConfigSource(etcd, logger),
            onApplied,
          });
  } catch (err) {
    if (err instanceof EtcdUnavailable) {
      logger.error({ err }, 'cannot load the configuration from etcd');
      process.stderr.write(`cannot load the configuration from etcd: ${err.message}\n`);
      return 1;
    }
    if (err instanceof ConfigRejected) {
      const where =
        system.config.source === 'file'
          ? args.gatewayPath
          : `etcd prefix ${system.config.etcd?.prefix ?? ''}`;
      logger.error({ errors: err.issues }, `${where}: invalid gateway config`);
      process.stderr.write(`${where}: invalid gateway config\n${formatIssues(err.issues)}\n`);
      return 1;
    }
    throw err;
  }
  let admin: AdminServer | undefined;
  let streams: StreamListener[] = [];
  try {
    if (workers > 1) {
      cluster = new ClusterPrimary({ gateway, workers, logger });
      await gateway.serveControlPlane();
      await cluster.start();
      logger.info({ workers }, 'worker processes serve the data plane');
    } else await gateway.listen();
    if (system.admin !== undefined) admin = await startAdminServer(gateway, system.admin, logger);
    if (cluster === undefined) streams = await startStreamListeners(system, logger);
    if (streams.length > 0) registerStreamMetrics(gateway.metrics.registry, () => streams);
  } catch (err) {
    logger.error({ err }, 'cannot start listeners');
    await cluster?.stop(0);
    return 1;
  }
  process.on('SIGHUP', () => {
    gateway.reload('signal').catch(() => undefined);
  });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await Promise.all([
    gateway.shutdown(),
    admin?.close(),
    closeStreamListeners(streams, system.timeouts.shutdown_timeout_seconds * 1000),
    cluster?.stop(system.timeouts.shutdown_timeout_seconds * 1000),
  ]);
  await closeAllPools();
  logger.info('stopped');
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  let args: CliArgs;
  try {
    args = parseCli(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.command === 'migrate') return runMigrate(args);
  return args.command === 'validate' ? validate(args) : run(args);
}
