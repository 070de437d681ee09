import { buildConsumerIndex } from '../config/consumers.js';
import type {
  GatewayConfig,
  PluginConfigEntry,
  PolicyConfig,
  RouteConfig,
  SupernodeConfig,
} from '../config/gateway.js';
import { interpolateEnv, interpolateLeaves } from '../config/interpolate.js';
import { sameData } from '../config/same-data.js';
import { changedSecretReferences, mentionsAny, secretsOf } from '../config/secrets/binding.js';
import { unresolvedSecretIssues } from '../config/secrets/store.js';
import { ConfigRejected, didYouMean, type ConfigIssue } from '../config/schema-validate.js';
import type { Logger } from '../core/logger.js';
import type { GatewayScope, PluginDefinition } from '../core/plugin.js';
import { routerBuilder, validateRouteMatch, type ResolvedMatch, type Router } from './router.js';
import { compilePolicy, type CompileContext } from './compile-policy.js';
import type { CompiledPolicy } from '../core/graph-types.js';
import { createScope, unreadMetrics } from '../core/gateway-scope.js';
import { checkSupernodeDefinition, checkSupernodeNesting } from './supernode-rules.js';
import { checkGlobalRules, withGlobalRules } from './global-rules.js';
import { resolveSharedChains } from './node-config.js';
import { openStores, type StoreSet } from '../stores/index.js';
import { nextTurn, pauseAndCollect } from '../runtime/young-collection.js';

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
  /** Policies this compile built; the others were taken over unchanged from the running runtime. */
  readonly compiled: number;
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
  /** The gateway's lifetime scope; a fresh one (defaults, metrics not recorded) when absent. */
  scope?: GatewayScope | undefined;
  /**
   * The running runtime of a reload: a policy it compiled whose stored form, and every shared
   * section it can depend on, are unchanged keeps its compiled form (see `reusable`).
   */
  previous?: Runtime | undefined;
}

/** What a later compile needs from a runtime to take over its unchanged policies. */
interface ReuseSource {
  env: NodeJS.ProcessEnv;
  configDir: string | undefined;
  scope: GatewayScope;
  registry: CompileOptions['registry'];
  /** The secret store's version this runtime read its `${secret:…}` values at (docs/secrets.md). */
  secretsVersion: number | undefined;
  /** Policy name → its stored form, its compiled form and the warnings its compile gave. */
  byName: ReadonlyMap<string, Compiled>;
}

/** One policy of a runtime: its stored form, compiled form, compile warnings. */
interface Compiled {
  item: PolicyConfig;
  compiled: CompiledPolicy;
  warnings: string[];
}
const reuseSources = new WeakMap<Runtime, ReuseSource>();

/**
 * Runtimes holding each compiled policy: a policy carried into the next runtime on reload has
 * its nodes closed only when the last runtime holding it is closed.
 */
const holders = new WeakMap<CompiledPolicy, number>();

/** Sections every policy may depend on: a change in any of them recompiles every policy. */
const SHARED_SECTIONS = ['plugin_configs', 'supernodes', 'global_rules', 'consumers', 'stores'] as const;

function uniqueByName<T extends { name: string }>(
  items: readonly T[],
  section: string,
  issues: ConfigIssue[],
): Map<string, { item: T; index: number }> {
  const steps = uniqueByNameSteps(items, section, issues);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Items between pauses of the compiler in a pass over a whole section (names, reused policies). */
const ITEMS_PER_STEP = 256;

/** `uniqueByName`, pausing every ITEMS_PER_STEP items: sections of 10,000 entries take milliseconds. */
function* uniqueByNameSteps<T extends { name: string }>(
  items: readonly T[],
  section: string,
  issues: ConfigIssue[],
): Generator<void, Map<string, { item: T; index: number }>> {
  const out = new Map<string, { item: T; index: number }>();
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    if (out.has(item.name)) {
      issues.push({
        path: `${section}[${index}].name`,
        message: `${section}: duplicate name '${item.name}'`,
      });
    } else out.set(item.name, { item, index });
    if (index % ITEMS_PER_STEP === ITEMS_PER_STEP - 1) yield;
  }
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
export const COMPILE_SLICE_MS = 8;

/**
 * `compileGateway` in slices of about `sliceMs`, yielding to the event loop between them, so a
 * reload of thousands of policies does not stall requests served by the running configuration
 * (docs/benchmarks.md, "Config scale"). After each `collectMs` of compiling, a pause also
 * collects the young generation (src/runtime/young-collection.ts). Same result and errors as
 * `compileGateway`.
 */
export async function compileGatewayAsync(
  config: GatewayConfig,
  options: CompileOptions,
  sliceMs = COMPILE_SLICE_MS,
  collectMs = COMPILE_SLICE_MS,
): Promise<Runtime> {
  const steps = compileSteps(config, options);
  let sliceStart = performance.now();
  let sinceCollected = 0;
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
    const slice = performance.now() - sliceStart;
    if (slice >= sliceMs) {
      sinceCollected += slice;
      if (sinceCollected >= collectMs) {
        sinceCollected = 0;
        await pauseAndCollect();
      } else await nextTurn();
      sliceStart = performance.now();
    }
  }
}

/** The compiler, pausing (yield) after each policy and route batch; the generator's value is the runtime. */
function* compileSteps(config: GatewayConfig, options: CompileOptions): Generator<void, Runtime> {
  const issues: ConfigIssue[] = [];
  const env = options.env ?? process.env;
  const warnings: string[] = [];
  const secrets = secretsOf(env);
  const secretsVersion = secrets?.version;
  // A `${secret:…}` without a value refuses the configuration, named by key path (docs/secrets.md);
  // policies are checked below, those taken over unchanged were checked when first compiled.
  for (const [section, value] of Object.entries(config))
    if (section !== 'policies') issues.push(...unresolvedSecretIssues(value, secrets, section));

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
    scope: options.scope ?? createScope({ metrics: unreadMetrics() }),
  };
  const policies = new Map<string, CompiledPolicy>();
  const byName = new Map<string, Compiled>();
  /** Policies this compile created (not taken over): closed here when the config is rejected. */
  const fresh: CompiledPolicy[] = [];
  const reuse = reusable(config, options, cc);
  const declaredPolicies = yield* uniqueByNameSteps(config.policies, 'policies', issues);
  let keptInStep = 0;
  for (const [name, { item, index }] of declaredPolicies) {
    const kept = reuse?.(item);
    if (kept !== undefined) {
      policies.set(name, kept.compiled);
      warnings.push(...kept.warnings);
      byName.set(name, kept);
      // Comparing a policy with the running one costs microseconds: pause every so many.
      if (++keptInStep === ITEMS_PER_STEP) {
        keptInStep = 0;
        yield;
      }
      continue;
    }
    const path = `policies[${index}]`;
    issues.push(...unresolvedSecretIssues(item, secrets, path));
    const warned = warnings.length;
    const compiled = compilePolicy(withGlobalRules(item, path, globalRules, issues), path, cc, issues);
    if (compiled !== undefined) {
      policies.set(name, compiled);
      fresh.push(compiled);
      byName.set(name, { item, compiled, warnings: warnings.slice(warned) });
    }
    yield;
  }

  // Each route is validated below, so it goes straight into the router under construction, in
  // match order: the first route added that holds wins (docs/routing.md#priority).
  const router = routerBuilder<RouteTarget>();
  const declaredRoutes = yield* uniqueByNameSteps(config.routes, 'routes', issues);
  for (const [name, { item, index }] of inMatchOrder(declaredRoutes)) {
    const match = resolveMatch(item.match ?? {}, env);
    issues.push(...validateRouteMatch(match, `routes[${index}].match`));
    const policy = policies.get(item.policy);
    if (!declaredPolicies.has(item.policy)) {
      issues.push({
        path: `routes[${index}].policy`,
        message: `route '${name}': unknown policy '${item.policy}'${didYouMean(item.policy, declaredPolicies.keys())}`,
      });
    } else if (policy !== undefined) {
      router.add({ name, match, target: { route: name, policy } });
    }
    if (index % 16 === 15) yield;
  }

  const closePolicies = async (list: Iterable<CompiledPolicy>) => {
    const closing: Promise<void>[] = [];
    let sliceStart = performance.now();
    for (const p of list) {
      for (const n of p.nodes.values()) {
        const r = n.instance.close?.();
        if (r instanceof Promise) closing.push(r);
      }
      // Thousands of upstream pools close in slices, between requests of the new runtime.
      if (performance.now() - sliceStart >= COMPILE_SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
    await Promise.allSettled(closing);
    stores.release();
  };
  if (issues.length > 0) {
    // Policies taken over from the running runtime stay its own.
    void closePolicies(fresh);
    throw new ConfigRejected(issues);
  }
  for (const p of policies.values()) holders.set(p, (holders.get(p) ?? 0) + 1);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    const last: CompiledPolicy[] = [];
    for (const p of policies.values()) {
      const left = (holders.get(p) ?? 1) - 1;
      holders.set(p, left);
      if (left === 0) last.push(p);
    }
    await closePolicies(last);
  };
  const runtime: Runtime = {
    config,
    router: router.finish(),
    policies,
    warnings,
    compiled: fresh.length,
    stores,
    close,
  };
  reuseSources.set(runtime, {
    env,
    configDir: options.configDir,
    scope: cc.scope,
    registry: options.registry,
    secretsVersion,
    byName,
  });
  return runtime;
}

/**
 * Routes in match order: higher `priority` first, equal priorities (default 0) in declaration
 * order. Array sort is stable; without any priority set the declared order is returned as is.
 */
function inMatchOrder(
  routes: ReadonlyMap<string, { item: RouteConfig; index: number }>,
): Iterable<[string, { item: RouteConfig; index: number }]> {
  let prioritized = false;
  for (const { item } of routes.values())
    if ((item.priority ?? 0) !== 0) {
      prioritized = true;
      break;
    }
  if (!prioritized) return routes;
  return [...routes].sort(([, a], [, b]) => (b.item.priority ?? 0) - (a.item.priority ?? 0));
}

/**
 * A route's criteria with `${ENV}` resolved, in a fresh object: the `host` key last, and left out
 * when null (the reference UI's "any host").
 */
function resolveMatch(match: RouteConfig['match'], env: NodeJS.ProcessEnv): ResolvedMatch {
  const out: Record<string, unknown> = {};
  for (const key in match) {
    if (key !== 'host') out[key] = interpolateLeaves((match as Record<string, unknown>)[key], env);
  }
  if (match.host !== null && match.host !== undefined) out.host = interpolateEnv(match.host, env);
  return out;
}

/**
 * On a reload, the test a policy passes to keep the running runtime's compiled form (undefined:
 * compile every policy): same gateway (scope, environment, directory, plugin registry), the same
 * shared sections (`plugin_configs`, `supernodes`, `global_rules`, `consumers`, `stores`), a
 * policy of that name with an equal stored form, and no node that read a file when it was created
 * (the file may have changed): only config keys whose schema says so count, with their supernode,
 * global-rule and `config_ref` parts resolved (`CompiledPolicy.readsFiles`, src/engine/file-keys.ts).
 * docs/configuration.md (hot reload), docs/benchmarks.md "Config scale".
 */
function reusable(
  config: GatewayConfig,
  options: CompileOptions,
  cc: CompileContext,
): ((item: PolicyConfig) => Compiled | undefined) | undefined {
  const source = options.previous === undefined ? undefined : reuseSources.get(options.previous);
  if (
    source === undefined ||
    source.scope !== cc.scope ||
    source.env !== cc.env ||
    source.configDir !== options.configDir ||
    source.registry !== options.registry
  )
    return undefined;
  const before = options.previous!.config;
  for (const section of SHARED_SECTIONS) {
    if (!sameData(before[section], config[section])) return undefined;
  }
  // Secret values that changed since: the policies (or shared sections) that mention them compile again.
  const rotated = changedSecretReferences(cc.env, source.secretsVersion);
  if (rotated !== undefined && SHARED_SECTIONS.some((s) => mentionsAny(config[s], rotated))) return undefined;
  return (item) => {
    const kept = source.byName.get(item.name);
    if (kept === undefined || kept.compiled.readsFiles === true || !sameData(kept.item, item))
      return undefined;
    if (rotated !== undefined && mentionsAny(item, rotated)) return undefined;
    return kept;
  };
}
