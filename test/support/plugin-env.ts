import { Writable } from 'node:stream';
import { pino } from 'pino';
import { EMPTY_CONSUMER_INDEX, type ConsumerIndex } from '../../src/config/consumers.js';
import { ConfigRejected, validateAgainst } from '../../src/config/schema-validate.js';
import { Context, type RequestInit } from '../../src/core/context.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import { NO_STORES, type StoreLookup } from '../../src/stores/index.js';
import { createGatewayScope } from '../../src/observability/gateway-scope.js';
import type {
  GatewayScope,
  NodeInstance,
  PluginDefinition,
  PluginEnv,
  Template,
} from '../../src/core/plugin.js';

/** A PluginEnv built by hand, with the load warnings it collected. */
export interface TestPluginEnv extends PluginEnv {
  readonly warnings: { key: string; message: string }[];
}

export interface TestEnvOptions {
  policy?: string;
  nodeId?: string;
  streaming?: boolean;
  logger?: Logger;
  /** Defaults to an empty index; build one with `buildConsumerIndex` from src/config/consumers.ts. */
  consumers?: ConsumerIndex;
  /** Directory of gateway.yaml as the compiler would pass it; undefined by default. */
  configDir?: string;
  /** Stores the node may look up by name (`env.stores`); none by default. */
  stores?: StoreLookup;
  /** Share one scope between envs to share local counters and caches; a fresh one by default. */
  scope?: GatewayScope;
}

/** The env a compiler would hand to a node; templates are static stubs. */
export function pluginEnv(options: TestEnvOptions = {}): TestPluginEnv {
  const warnings: { key: string; message: string }[] = [];
  return {
    policy: options.policy ?? 'test-policy',
    nodeId: options.nodeId ?? 'node-under-test',
    logger: options.logger ?? silentLogger,
    streaming: options.streaming ?? false,
    warnings,
    warn(key, message) {
      warnings.push({ key, message });
    },
    template(source): Template {
      return { source, isStatic: true, render: () => source };
    },
    configDir: options.configDir,
    consumers: options.consumers ?? EMPTY_CONSUMER_INDEX,
    stores: options.stores ?? NO_STORES,
    scope: options.scope ?? createGatewayScope(),
  };
}

/**
 * Validates `config` against the plugin's schema (applying defaults and
 * coercions, as the compiler does) and creates the node. Schema problems are
 * thrown as ConfigRejected; `create`'s own checks throw ConfigError.
 */
export function instantiate<C, P extends string>(
  definition: PluginDefinition<C, P>,
  config: unknown,
  env: PluginEnv = pluginEnv(),
): NodeInstance<P> {
  const copy: unknown = structuredClone(config);
  const issues = validateAgainst(definition.schema, copy, '');
  if (issues.length > 0) throw new ConfigRejected(issues);
  return definition.create(copy as C, env);
}

/** A request context as the server would build it; override any field. */
export function requestContext(
  init: Partial<RequestInit> = {},
  signal: AbortSignal = new AbortController().signal,
): Context {
  return new Context(
    {
      method: 'GET',
      url: '/',
      host: 'gateway.test',
      scheme: 'http',
      protocol: 'http1',
      headers: { host: init.host ?? 'gateway.test' },
      remoteAddress: '192.0.2.10',
      remotePort: 40000,
      ...init,
    },
    signal,
  );
}

/** A logger whose records land in `records` (parsed JSON), for asserting on health-change logs. */
export function capturingLogger(): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line !== '') records.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: pino({ level: 'debug', base: null }, sink), records };
}
