import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { PluginDefinition } from '../core/plugin.js';

type AnyPlugin = PluginDefinition<never, string>;

/**
 * The only list of node types. Compiler, /api/plugins, the editor, MCP and
 * docs all read it. Each entry loads one family folder's index, named like the
 * editor's category, and returns its definitions; add a family with one line below.
 */
const families: readonly (() => Promise<readonly unknown[]>)[] = [
  () => import('./structural/index.js').then((m) => m.structuralPlugins),
  () => import('./core/index.js').then((m) => m.corePlugins),
  () => import('./errors-and-mocking/index.js').then((m) => m.errorsAndMockingPlugins),
  () => import('./security/index.js').then((m) => m.securityPlugins),
  () => import('./faas/index.js').then((m) => m.faasPlugins),
  () => import('./auth/index.js').then((m) => m.authPlugins),
  () => import('./grpc/index.js').then((m) => m.grpcPlugins),
  () => import('./flow/index.js').then((m) => m.flowPlugins),
  () => import('./traffic/index.js').then((m) => m.trafficPlugins),
  () => import('./scripting/index.js').then((m) => m.scriptingPlugins),
  () => import('./serverless/index.js').then((m) => m.serverlessPlugins),
  () => import('./stores/index.js').then((m) => m.storePlugins),
  () => import('./observability/index.js').then((m) => m.observabilityPlugins),
  () => import('./ai/index.js').then((m) => m.aiPlugins),
];

/** Every definition, in catalog order, imported now (the sources, and the build that writes the manifest). */
export async function importAllPlugins(): Promise<AnyPlugin[]> {
  const loaded = await Promise.all(families.map((load) => load()));
  return loaded.flat() as AnyPlugin[];
}

/**
 * One line of `dist/plugins/manifest.json` (written by scripts/build-plugin-manifest.mjs):
 * a type's metadata, and where its definition lives (`module`, `export`, `index` in an array export).
 */
export interface ManifestEntry {
  type: string;
  module: string;
  export: string;
  index?: number;
  readsResponseBody: boolean;
  /** True when the module decides `readsRequestBody` per instance (a function the JSON cannot hold). */
  readsRequestBodyPerConfig?: boolean;
  definition: Omit<AnyPlugin, 'create' | 'readsResponseBody'>;
}

const MANIFEST = new URL('./manifest.json', import.meta.url);
const requireModule = createRequire(import.meta.url);
const loadedTypes = new Set<string>();
const implementations = new Map<string, () => AnyPlugin>();

/**
 * The compiled build's manifest, or undefined when running the sources (there is none next to
 * them) or on a Node without synchronous `require()` of ES modules (before 20.19): then every
 * plugin module is imported at startup, as from the sources.
 */
function readManifest(): ManifestEntry[] | undefined {
  if ((process.features as { require_module?: boolean }).require_module !== true) return undefined;
  try {
    return (JSON.parse(readFileSync(MANIFEST, 'utf8')) as { plugins: ManifestEntry[] }).plugins;
  } catch {
    return undefined;
  }
}

/**
 * A definition whose metadata (schema, ports, templated fields) comes from the manifest and whose
 * module is imported the first time a configuration compiles a node of its type: a gateway that
 * uses no Lua, casbin or LDAP node never loads fengari, casbin or ldapts (docs/deployment.md).
 */
function lazyDefinition(entry: ManifestEntry): AnyPlugin {
  let real: AnyPlugin | undefined;
  const implementation = (): AnyPlugin => {
    if (real !== undefined) return real;
    // Synchronous: `create` is, and a module of the build's own tree has no top-level await.
    const exported = (requireModule(entry.module) as Record<string, unknown>)[entry.export];
    const found = entry.index === undefined ? exported : (exported as unknown[] | undefined)?.[entry.index];
    if ((found as AnyPlugin | undefined)?.type !== entry.type) {
      throw new Error(
        `dist/plugins/manifest.json is stale: ${entry.module} does not define '${entry.type}' (run npm run build)`,
      );
    }
    real = found as AnyPlugin;
    loadedTypes.add(entry.type);
    return real;
  };
  implementations.set(entry.type, implementation);
  const definition: AnyPlugin = {
    ...entry.definition,
    create: (config, env) => implementation().create(config, env),
  };
  if (entry.readsResponseBody)
    definition.readsResponseBody = (config) => implementation().readsResponseBody?.(config) ?? false;
  if (entry.readsRequestBodyPerConfig === true)
    definition.readsRequestBody = (config) => {
      const reads = implementation().readsRequestBody;
      return typeof reads === 'function' ? reads(config) : reads !== false;
    };
  return definition;
}

function buildRegistry(list: AnyPlugin[]): Map<string, AnyPlugin> {
  const map = new Map<string, AnyPlugin>();
  for (const def of list) {
    if (map.has(def.type)) throw new Error(`plugin type '${def.type}' is registered twice`);
    map.set(def.type, def);
  }
  return map;
}

const manifest = readManifest();
const definitions = manifest === undefined ? await importAllPlugins() : manifest.map(lazyDefinition);
if (manifest === undefined) {
  for (const def of definitions) {
    loadedTypes.add(def.type);
    implementations.set(def.type, () => def);
  }
}

export const registry: ReadonlyMap<string, AnyPlugin> = buildRegistry(definitions);

/** Whether plugin modules load on first use (the compiled build) rather than all at startup. */
export const pluginsLoadLazily = manifest !== undefined;

/** The types whose modules are loaded so far (all of them unless `pluginsLoadLazily`). */
export function loadedPluginTypes(): ReadonlySet<string> {
  return loadedTypes;
}

/** The full definition of `type` (its module imported now if it was not yet); undefined for an unknown type. */
export function pluginImplementation(type: string): AnyPlugin | undefined {
  return implementations.get(type)?.();
}
