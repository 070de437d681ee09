import { buildConsumerIndex } from '../config/consumers.js';
import type { GatewayConfig, PluginConfigEntry, SupernodeConfig } from '../config/gateway.js';
import { interpolateLeaves } from '../config/interpolate.js';
import { ConfigRejected, didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayScope, PluginDefinition } from '../plugins/define.js';
import { routerBuilder, validateRouteMatch, type ResolvedMatch, type Router } from '../server/router.js';
import { compilePolicy, type CompileContext } from './compile-policy.js';
import type { CompiledPolicy } from './graph-types.js';
import { createGatewayScope } from './gateway-scope.js';
import { checkSupernodeDefinition, checkSupernodeNesting } from './supernode-rules.js';
import { checkGlobalRules, withGlobalRules } from './global-rules.js';
import { resolveSharedChains } from './node-config.js';
import { openStores, type StoreSet } from '../stores/index.js';

export interface RouteTarget {
  route: string;
  policy: CompiledPolicy;
}

/** An immutable, fully compiled configuration; the server swaps these atomically. */
export interface Runtime {
  readonly config: GatewayConfig;
  readonly router: Router<RouteTarget>;
  readonly policies: ReadonlyMap<string, CompiledPolicy>;
  readonly warnings: readonly string[];
  /** The `stores:` of this configuration; connections are shared with other runtimes by resolved config. */
  readonly stores: StoreSet;
  /** Releases node resources (timers, health checkers) once no request uses this runtime. */
  close(): Promise<void>;
}

export interface CompileOptions {
  registry: ReadonlyMap<string, PluginDefinition<never, string>>;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  templateFactory: CompileContext['templateFactory'];
  /** Directory of gateway.yaml, when the config came from a file. */
  configDir?: string | undefined;
  /** The gateway's lifetime scope; a fresh one (defaults, own metrics) when absent. */
  scope?: GatewayScope | undefined;
}

function uniqueByName<T extends { name: string }>(
  items: readonly T[],
  section: string,
  issues: ConfigIssue[],
): Map<string, { item: T; index: number }> {
  const out = new Map<string, { item: T; index: number }>();
  items.forEach((item, index) => {
    if (out.has(item.name)) {
      issues.push({
        path: `${section}[${index}].name`,
        message: `${section}: duplicate name '${item.name}'`,
      });
    } else out.set(item.name, { item, index });
  });
  return out;
}

/** Validates and compiles a whole gateway configuration; throws ConfigRejected with every issue. */
export function compileGateway(config: GatewayConfig, options: CompileOptions): Runtime {
  const steps = compileSteps(config, options);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Event-loop time one slice of `compileGatewayAsync` may take before it lets requests run. */
export const COMPILE_SLICE_MS = 10;

/**
 * `compileGateway` in slices of about `sliceMs`, yielding to the event loop between them, so a
 * reload of thousands of policies does not stall requests served by the running configuration
 * (docs/benchmarks.md, "Config scale"). Same result and errors as `compileGateway`.
 */
export async function compileGatewayAsync(
  config: GatewayConfig,
  options: CompileOptions,
  sliceMs = COMPILE_SLICE_MS,
): Promise<Runtime> {
  const steps = compileSteps(config, options);
  let sliceStart = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/** The compiler, pausing (yield) after each policy and route batch; the generator's value is the runtime. */
function* compileSteps(config: GatewayConfig, options: CompileOptions): Generator<void, Runtime> {
  const issues: ConfigIssue[] = [];
  const env = options.env ?? process.env;
  const warnings: string[] = [];

  const shared = uniqueByName(config.plugin_configs, 'plugin_configs', issues);
  for (const [name, { item, index }] of shared) {
    if (!options.registry.has(item.type)) {
      issues.push({
        path: `plugin_configs[${index}].type`,
        message: `plugin_configs '${name}': Unknown plugin type: ${item.type}${didYouMean(item.type, options.registry.keys())}`,
      });
    }
    if ('config_ref' in item.config) {
      issues.push({
        path: `plugin_configs[${index}].config.config_ref`,
        message: `plugin_configs '${name}': shared configs cannot reference other shared configs inside config — put config_ref beside config`,
      });
    }
  }
  const sharedConfigs: ReadonlyMap<string, PluginConfigEntry> = resolveSharedChains(shared, issues);
  const supernodes = new Map<string, { def: SupernodeConfig; path: string }>();
  for (const [name, { item, index }] of uniqueByName(config.supernodes, 'supernodes', issues)) {
    supernodes.set(name, { def: item, path: `supernodes[${index}]` });
    issues.push(...checkSupernodeDefinition(item, `supernodes[${index}]`, options.registry));
  }
  issues.push(...checkSupernodeNesting(supernodes));
  const globalRules = checkGlobalRules(config.global_rules, supernodes, issues);
  uniqueByName(config.stores, 'stores', issues);
  const stores = openStores(config.stores, { env, configDir: options.configDir }, issues);
  uniqueByName(config.consumers, 'consumers', issues);
  const consumers = buildConsumerIndex(config.consumers, env, issues);

  const cc: CompileContext = {
    registry: options.registry,
    supernodes,
    sharedConfigs,
    env,
    logger: options.logger,
    warnings,
    consumers,
    templateFactory: options.templateFactory,
    configDir: options.configDir,
    stores,
    scope: options.scope ?? createGatewayScope(),
  };
  const policies = new Map<string, CompiledPolicy>();
  for (const [name, { item, index }] of uniqueByName(config.policies, 'policies', issues)) {
    const path = `policies[${index}]`;
    const compiled = compilePolicy(withGlobalRules(item, path, globalRules, issues), path, cc, issues);
    if (compiled !== undefined) policies.set(name, compiled);
    yield;
  }

  // Each route is validated below, so it goes straight into the router under construction.
  const router = routerBuilder<RouteTarget>();
  const declaredPolicies = new Set(config.policies.map((p) => p.name));
  for (const [name, { item, index }] of uniqueByName(config.routes, 'routes', issues)) {
    const { host, ...criteria } = item.match ?? {};
    const match = interpolateLeaves<ResolvedMatch>(
      host === null || host === undefined ? criteria : { ...criteria, host },
      env,
    );
    issues.push(...validateRouteMatch(match, `routes[${index}].match`));
    const policy = policies.get(item.policy);
    if (!declaredPolicies.has(item.policy)) {
      issues.push({
        path: `routes[${index}].policy`,
        message: `route '${name}': unknown policy '${item.policy}'${didYouMean(item.policy, declaredPolicies)}`,
      });
    } else if (policy !== undefined) {
      router.add({ name, match, target: { route: name, policy } });
    }
    if (index % 256 === 255) yield;
  }

  const closeAll = async () => {
    const closing: Promise<void>[] = [];
    for (const p of policies.values()) {
      for (const n of p.nodes.values()) {
        const r = n.instance.close?.();
        if (r instanceof Promise) closing.push(r);
      }
    }
    await Promise.allSettled(closing);
    stores.release();
  };
  if (issues.length > 0) {
    void closeAll();
    throw new ConfigRejected(issues);
  }
  return { config, router: router.finish(), policies, warnings, stores, close: closeAll };
}
