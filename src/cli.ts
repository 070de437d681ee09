import { parseArgs } from 'node:util';
import { ConfigRejected, formatIssues, type ConfigIssue } from './config/schema-validate.js';
import { loadSystemConfig, type StreamListenerConfig } from './config/system.js';
import { loadGatewayConfig, type GatewayConfig } from './config/gateway.js';
import { createLogger, silentLogger } from './core/logger.js';
import type { Gateway, ApplySource } from './gateway.js';
import { compileWith } from './plugins/compile-with.js';
import type { Runtime } from './engine/compile.js';
import type { AdminServer } from './admin/server.js';
import { acmeStoreIssues } from './config/acme.js';
import type { StreamListeners } from './stream/index.js';
import { isClusterWorker } from './cluster/role.js';
import { resolveWorkers } from './cluster/workers-count.js';
import type { ClusterPrimary } from './cluster/primary.js';
import { describeStartupError, tlsFileIssues, type ListenerKey } from './config/startup-errors.js';
// Everything else is imported where it is used: `validate` loads no server, Admin API or cluster
// module, and the Admin API loads after the data plane listens (docs/benchmarks.md#startup-and-memory).
const yamlLocate = () => import('./config/yaml-locate.js');
const closeAllPools = async () => (await import('./outbound/pool-registry.js')).closeAllPools();
import { readFileSync } from 'node:fs';
import { interpolateEnv } from './config/interpolate.js';

const USAGE = `Usage:
  switchyard --version
  switchyard [--system-config <path>] [--gateway-config <path>]
  switchyard validate [--system-config <path>] [--gateway-config <path>] [--json] [--no-tests]
  switchyard migrate --gateway-config <path> [--system-config <path>] [--write] [--drop-unknown-keys]
  switchyard mcp --stdio [--url <MCP endpoint URL>]   (token in SWITCHYARD_MCP_TOKEN)
  switchyard import kong|apisix <file> [-o <gateway.yaml>]
  switchyard dump [--output <file>]          (Admin API: --admin-url, --user, --password
  switchyard diff --gateway-config <file> | diff <A> <B>    or SWITCHYARD_ADMIN_URL/_USER/_PASSWORD)
  switchyard apply --gateway-config <file> [--dry-run] [--if-match <etag>]
  switchyard test [--system-config <path>] [--gateway-config <path>] [<tests.yaml>...] [--junit <file>]

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
  /** validate: print one JSON report instead of text lines. */
  json: boolean;
  /** validate: skip the policy tests of gateway.yaml (docs/config-as-code.md#policy-tests). */
  noTests: boolean;
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
      version: { type: 'boolean', short: 'v', default: false },
      write: { type: 'boolean', default: false },
      'drop-unknown-keys': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'no-tests': { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  if (values.version) {
    process.stdout.write(`switchyard ${packageVersion()}\n`);
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
  if (values.json && command !== 'validate') throw new TypeError('--json is an option of validate only');
  if (values['no-tests'] && command !== 'validate')
    throw new TypeError('--no-tests is an option of validate only');
  return {
    command,
    systemPath: values['system-config'],
    systemGiven: argv.some((a) => a === '--system-config' || a.startsWith('--system-config=')),
    gatewayPath: values['gateway-config'],
    write: values.write,
    dropUnknownKeys: values['drop-unknown-keys'],
    json: values.json,
    noTests: values['no-tests'],
  };
}

/** The signals a running gateway acts on (docs/deployment.md#signals). */
const HANDLED_SIGNALS: readonly NodeJS.Signals[] = ['SIGHUP', 'SIGUSR1', 'SIGTERM', 'SIGINT'];

/**
 * The signals bin/switchyard.js caught on its first line and queued while the gateway could not
 * act on them yet (a SIGHUP that arrives before the listeners answer used to kill the process).
 */
export interface EarlySignals {
  /** Stops queueing `signals`; returns those of them that arrived meanwhile, in order. */
  take(signals: readonly NodeJS.Signals[]): NodeJS.Signals[];
}

/**
 * Hands `signals` over from the early queue to the listeners installed now: each one that arrived
 * is emitted to them once (several SIGHUPs make one reload). One without a listener takes its
 * default action (`'default'`: commands that handle no signal) or is dropped (`'drop'`).
 */
function handOver(
  early: EarlySignals | undefined,
  signals: readonly NodeJS.Signals[],
  fallback: 'default' | 'drop',
): void {
  for (const signal of new Set(early?.take(signals) ?? [])) {
    if (process.listenerCount(signal) > 0) process.emit(signal, signal);
    else if (fallback === 'default' && signal !== 'SIGUSR1') process.kill(process.pid, signal);
  }
}

/** system.yaml is interpolated before it is parsed; locate its issues in the same text. */
const interpolated = (text: string): string => interpolateEnv(text, process.env);

/** The version in package.json (one folder above src/ and dist/ alike). */
function packageVersion(): string {
  const url = new URL('../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

/** One `validate --json` error (docs/configuration.md): where it is and what is wrong. */
interface ValidateError {
  file: string;
  line?: number;
  column?: number;
  path: string;
  message: string;
}

/**
 * `switchyard validate`: every problem of both files with its path; exit 1 on
 * any. With `--json`, one JSON document on stdout instead of the text lines.
 */
async function validate(args: CliArgs): Promise<number> {
  /** In file order; issues are located in their file (which loads the YAML parser) only if any. */
  const found: (
    | { error: ValidateError; text: string }
    | { file: string; issues: readonly ConfigIssue[]; transform?: (text: string) => string }
  )[] = [];
  const warnings: string[] = [];
  const add = (file: string, issues: readonly ConfigIssue[], transform?: (text: string) => string) => {
    if (issues.length > 0) found.push({ file, issues, ...(transform === undefined ? {} : { transform }) });
  };
  let system;
  try {
    system = loadSystemConfig(args.systemPath);
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    add(args.systemPath, err.issues, interpolated);
  }
  if (system !== undefined) add(args.systemPath, tlsFileIssues(system), interpolated);
  // `${secret:…}` references are read here too: one that does not resolve is an error (docs/secrets.md).
  const secrets =
    system?.secrets === undefined
      ? undefined
      : await (await import('./config/secrets/load.js')).loadSecrets(system, silentLogger, args.gatewayPath);
  if (secrets !== undefined) add(args.systemPath, secrets.issues, interpolated);
  /** Kept for its `tests:` section. */
  let gatewayConfig: GatewayConfig | undefined;
  try {
    const runtime = compileWith(
      (gatewayConfig = loadGatewayConfig(args.gatewayPath)),
      silentLogger,
      process.env,
      args.gatewayPath,
    );
    warnings.push(...runtime.warnings);
    if (system !== undefined)
      for (const issue of acmeStoreIssues(system, runtime.stores.names))
        found.push({
          error: { file: args.systemPath, path: issue.path, message: issue.message },
          text: `${args.systemPath}: ${issue.message}`,
        });
    void runtime.close();
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    add(args.gatewayPath, err.issues);
    // A shape error stopped the load: compile the items it did not name, for their errors too.
    if (gatewayConfig === undefined) add(args.gatewayPath, await beyondShape(args.gatewayPath, err.issues));
  }
  secrets?.store?.close();
  const located = found.some((f) => 'issues' in f) ? await yamlLocate() : undefined;
  const errors = found.flatMap((f) =>
    'issues' in f && located !== undefined
      ? located.locateFileIssues(f.file, f.issues, f.transform).map((issue) => ({
          error: { file: f.file, ...issue },
          text: located.formatLocatedIssue(f.file, issue),
        }))
      : 'error' in f
        ? [f]
        : [],
  );
  // A valid configuration's policy tests run too (docs/config-as-code.md#policy-tests).
  const tests =
    errors.length > 0 || args.noTests || gatewayConfig === undefined
      ? undefined
      : await validateTests(args, gatewayConfig).catch((err: Error) => err);
  const failed =
    tests instanceof Error ? 1 : (tests?.results.filter((r) => r.failures.length > 0).length ?? 0);
  if (args.json) {
    const report = {
      valid: errors.length === 0,
      errors: errors.map((e) => e.error),
      warnings,
      ...(tests === undefined
        ? {}
        : tests instanceof Error
          ? { tests: { error: tests.message } }
          : { tests: { passed: tests.results.length - failed, failed, results: tests.results } }),
    };
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    return errors.length > 0 || failed > 0 ? 1 : 0;
  }
  for (const warning of warnings) process.stdout.write(`warning: ${warning}\n`);
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`error: ${e.text}\n`);
    process.stderr.write(`${errors.length} error(s)\n`);
    return 1;
  }
  process.stdout.write('configuration is valid\n');
  if (tests instanceof Error) process.stderr.write(`error: policy tests: ${tests.message}\n`);
  else for (const line of tests?.lines ?? []) process.stdout.write(`${line}\n`);
  return failed > 0 ? 1 : 0;
}

/** The policy tests of gateway.yaml, if it has any; their modules load only then. */
/** The compile errors of the items a shape error did not name (every error in one pass, F19). */
async function beyondShape(path: string, shapeIssues: readonly ConfigIssue[]): Promise<ConfigIssue[]> {
  const { readGatewayItems } = await import('./config/gateway.js');
  const { issuesBesideShape } = await import('./config/shape-recovery.js');
  const raw = readGatewayItems(path);
  return raw === undefined
    ? []
    : issuesBesideShape(raw, shapeIssues, (config) => compileIssuesOf(config, path));
}

function compileIssuesOf(config: GatewayConfig, path: string): readonly ConfigIssue[] {
  try {
    void compileWith(config, silentLogger, process.env, path).close();
    return [];
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues;
    throw err;
  }
}

async function validateTests(args: CliArgs, config: GatewayConfig) {
  if (config.tests === undefined || config.tests.length === 0) return undefined;
  const { runGatewayTests } = await import('./cli/test-command.js');
  return runGatewayTests(args.systemGiven ? args.systemPath : undefined, args.gatewayPath, config);
}

async function run(args: CliArgs, early: EarlySignals | undefined): Promise<number> {
  // `workers`: a forked worker takes its configuration from the primary (docs/workers.md).
  if (isClusterWorker()) {
    const { runClusterWorker } = await import('./cluster/worker.js');
    // It installs its signal listeners before its first await: the queued signals go to them.
    const worker = runClusterWorker();
    handOver(early, HANDLED_SIGNALS, 'drop');
    return worker;
  }
  let system;
  try {
    system = loadSystemConfig(args.systemPath);
  } catch (err) {
    if (err instanceof ConfigRejected) {
      process.stderr.write(
        `${args.systemPath}: invalid system config\n${(await yamlLocate()).formatFileIssues(args.systemPath, err.issues, interpolated).join('\n')}\n`,
      );
      return 1;
    }
    throw err;
  }
  // OTLP export (docs/opentelemetry.md): the SDK starts first, so the logger can feed its log export.
  const telemetry =
    system.telemetry?.otlp === undefined
      ? undefined
      : (await import('./telemetry/index.js')).startTelemetry(system);
  const logger = createLogger(system.logging, telemetry?.logSink);
  telemetry?.useLogger(logger);
  // Listened for before anything starts: a SIGTERM while the configuration loads or the Admin API and
  // the stream listeners are still loading (imported after the data plane listens) stops cleanly.
  let stopRequested = false;
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      stopRequested = true;
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  handOver(early, ['SIGTERM', 'SIGINT'], 'drop');
  const workers = resolveWorkers(system.workers);
  // `${secret:…}` of both files are read before the configuration compiles (docs/secrets.md).
  const secrets =
    system.secrets === undefined
      ? undefined
      : await (await import('./config/secrets/load.js')).loadSecrets(system, logger, args.gatewayPath);
  if (secrets !== undefined && secrets.issues.length > 0) {
    process.stderr.write(
      `${args.systemPath}: invalid system config\n${(await yamlLocate()).formatFileIssues(args.systemPath, secrets.issues, interpolated).join('\n')}\n`,
    );
    secrets.store?.close();
    return 1;
  }
  let cluster: ClusterPrimary | undefined;
  const onApplied = (runtime: Runtime, source: ApplySource): Promise<void> =>
    cluster?.broadcast(runtime.config, source) ?? Promise.resolve();
  const [{ Gateway }, { EtcdConfigSource }, { EtcdUnavailable }] = await Promise.all([
    import('./gateway.js'),
    import('./config/etcd-source.js'),
    import('./config/etcd-client.js'),
  ]);
  let gateway: Gateway;
  // The primary of `workers: N` serves no requests: nothing periodic runs in it (docs/workers.md).
  const controlPlaneOnly = workers > 1;
  if (system.config.source === 'kubernetes' && workers > 1) {
    process.stderr.write('config.source: kubernetes runs with workers: 1 only (docs/kubernetes.md)\n');
    return 1;
  }
  try {
    const etcd = system.config.etcd;
    gateway =
      system.config.source === 'kubernetes'
        ? Gateway.createFromKubernetes({
            system,
            logger,
            kubernetes: new (await import('./kubernetes/source.js')).KubernetesSource(
              system.config.kubernetes,
              logger,
              process.env,
              system.listener.bind,
              (await import('./plugins/check-policy-graph.js')).policyChecker(logger, process.env),
            ),
            onApplied,
            ...(telemetry === undefined ? {} : { telemetry }),
          })
        : system.config.source === 'file' || etcd === undefined
          ? Gateway.create({
              system,
              gatewayPath: args.gatewayPath,
              logger,
              onApplied,
              controlPlaneOnly,
              ...(telemetry === undefined ? {} : { telemetry }),
            })
          : await Gateway.createFromEtcd({
              system,
              gatewayPath: args.gatewayPath,
              logger,
              etcd: new EtcdConfigSource(etcd, logger),
              onApplied,
              controlPlaneOnly,
              ...(telemetry === undefined ? {} : { telemetry }),
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
      const unreadable = err.issues.length === 1 && err.issues[0]?.message.startsWith('cannot read ');
      if (unreadable) {
        logger.error(err.issues[0]?.message);
        process.stderr.write(`error: ${err.issues[0]?.message}\n`);
        return 1;
      }
      // The errors go to stderr once, located in the file; the log line only says why the process stops.
      logger.error({ errors: err.issues.length }, `${where}: invalid gateway config`);
      const lines =
        system.config.source === 'file'
          ? (await yamlLocate()).formatFileIssues(args.gatewayPath, err.issues)
          : formatIssues(err.issues).split('\n');
      process.stderr.write(`${where}: invalid gateway config\n${lines.join('\n')}\n`);
      return 1;
    }
    throw err;
  }
  // With workers the primary exports the aggregated /metrics (docs/opentelemetry.md#workers).
  telemetry?.exportMetrics(gateway.metrics.registry, workers > 1 ? () => gateway.renderMetrics() : undefined);
  // A changed secret value re-applies the configuration: the policies that use it compile again.
  secrets?.store?.start(
    () => void gateway.apply((current) => current, 'secrets').catch(() => undefined),
    // system.yaml's were read once and are kept as they are: only gateway.yaml's are refreshed.
    () => gateway.runtime.config,
  );
  // Stopped while the configuration loaded: nothing listens yet, so nothing needs to drain.
  if (stopRequested) {
    await gateway.shutdown();
    await closeAllPools();
    logger.info('stopped');
    return 0;
  }
  let admin: AdminServer | undefined;
  let streams: StreamListeners | undefined;
  let starting: ListenerKey = 'listener';
  try {
    if (workers > 1) {
      const { ClusterPrimary } = await import('./cluster/primary.js');
      cluster = new ClusterPrimary({ gateway, workers, logger });
      // Workers listen first: an ACME order the control plane starts is validated through them.
      await cluster.start();
      await gateway.serveControlPlane();
      logger.info({ workers }, 'worker processes serve the data plane');
    } else await gateway.listen();
    starting = 'admin';
    if (system.admin !== undefined)
      admin = await (await import('./admin/server.js')).startAdminServer(gateway, system.admin, logger);
    starting = 'stream';
    if (cluster === undefined)
      streams = await (await import('./stream/index.js')).StreamListeners.start(system, logger);
    const running = streams;
    if (running !== undefined)
      (await import('./stream/metrics.js')).registerStreamMetrics(
        gateway.metrics.registry,
        () => running.list,
      );
  } catch (err) {
    // One line naming the key to change, not a stack: the cause is the operator's, not a bug.
    const line = describeStartupError(err, starting, system);
    logger.error({ code: (err as NodeJS.ErrnoException).code }, `cannot start: ${line}`);
    process.stderr.write(`error: ${line}\n`);
    await Promise.all([gateway.shutdown(), admin?.close(), cluster?.stop(0)]).catch(() => undefined);
    await closeAllPools();
    return 1;
  }
  let current = system;
  process.on('SIGHUP', () => {
    gateway.reload('signal').catch(() => undefined);
    const running = streams;
    const workers = cluster;
    const apply =
      running !== undefined
        ? (stream: StreamListenerConfig[]) => running.apply(stream)
        : (stream: StreamListenerConfig[]) => {
            workers?.applyStream(stream);
            return Promise.resolve(undefined);
          };
    void import('./stream/reload.js')
      .then(({ reloadStreams }) => reloadStreams(args.systemPath, current, apply, logger))
      .then((next) => {
        current = next;
      });
  });
  // Workers write their own access-log lines; logrotate signals the primary only.
  if (cluster !== undefined) process.on('SIGUSR1', () => cluster?.signalWorkers('SIGUSR1'));
  // A SIGHUP (or SIGUSR1) that came while starting is applied now, against the running gateway.
  handOver(early, ['SIGHUP', 'SIGUSR1'], 'drop');
  await stopped;
  await Promise.all([
    gateway.shutdown(),
    admin?.close(),
    streams?.close(system.timeouts.shutdown_timeout_seconds * 1000),
    cluster?.stop(system.timeouts.shutdown_timeout_seconds * 1000),
  ]);
  secrets?.store?.close();
  await closeAllPools();
  logger.info('stopped');
  // Last: what is still buffered (the records above included) is exported before the process ends.
  await telemetry?.shutdown();
  return 0;
}

/**
 * The `switchyard` command. `early`: the signals bin/switchyard.js queued from its first line; a
 * command other than the gateway itself handles none, so they take their default action.
 */
export async function main(argv: string[], early?: EarlySignals): Promise<number> {
  // Imported here: the MCP SDK client costs ~25 MiB a gateway that is not this command never needs.
  if (argv[0] === 'mcp') {
    handOver(early, HANDLED_SIGNALS, 'default');
    return (await import('./admin/mcp/stdio.js')).runMcpCommand(argv.slice(1));
  }
  if (argv[0] === 'import') {
    handOver(early, HANDLED_SIGNALS, 'default');
    return (await import('./migrate/import-command.js')).runImport(argv.slice(1));
  }
  // Config as code (docs/config-as-code.md): their own modules, their own options.
  if (argv[0] === 'dump' || argv[0] === 'diff' || argv[0] === 'apply') {
    handOver(early, HANDLED_SIGNALS, 'default');
    return (await import('./cli/config-commands.js')).runConfigCommand(argv[0], argv.slice(1));
  }
  if (argv[0] === 'test') {
    handOver(early, HANDLED_SIGNALS, 'default');
    return (await import('./cli/test-command.js')).runTestCommand(argv.slice(1));
  }
  let args: CliArgs;
  try {
    args = parseCli(argv);
  } catch (err) {
    handOver(early, HANDLED_SIGNALS, 'default');
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.command !== 'run') handOver(early, HANDLED_SIGNALS, 'default');
  if (args.command === 'migrate') return (await import('./migrate/command.js')).runMigrate(args);
  return args.command === 'validate' ? validate(args) : run(args, early);
}
