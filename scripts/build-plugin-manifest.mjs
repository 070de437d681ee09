#!/usr/bin/env node
// Writes <dist>/plugins/manifest.json for scripts/build.mjs: for every node type, its metadata
// (schema, ports, templated fields…: what /api/plugins, validation and the editor read) and the
// module and export that define it, so the compiled gateway imports that module only when a
// configuration uses the type (src/plugins/index.ts). Then checks, in a fresh process, that the
// lazy registry matches the eager one and that every module loads synchronously.
import { spawnSync } from 'node:child_process';
import { deepStrictEqual } from 'node:assert';
import { readdirSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = process.argv[2];
if (dist === undefined) throw new Error('usage: build-plugin-manifest.mjs <dist dir>');
const pluginsDir = join(dist, 'plugins');
const manifestPath = join(pluginsDir, 'manifest.json');
const FUNCTION_KEYS = new Set(['create', 'readsResponseBody']);

if (process.argv[3] === '--verify') {
  await verify();
  process.exit(0);
}

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path) : entry.name.endsWith('.js') ? [path] : [];
  });
}

const index = await import(pathToFileURL(join(pluginsDir, 'index.js')).href);
if (index.pluginsLoadLazily) throw new Error(`${manifestPath} exists already: build into a fresh directory`);
const definitions = [...index.registry.values()];
const byIdentity = new Map(definitions.map((def) => [def, []]));

// Where each definition is exported: the module exporting the fewest definitions is the one that
// defines it (a family index re-exports many), so loading it pulls in the least.
for (const file of walk(pluginsDir)) {
  const module = `./${relative(pluginsDir, file).split(sep).join('/')}`;
  const exports = await import(pathToFileURL(file).href);
  for (const [name, value] of Object.entries(exports)) {
    if (byIdentity.has(value)) byIdentity.get(value).push({ module, export: name, weight: 1 });
    else if (Array.isArray(value)) {
      value.forEach((item, i) => {
        if (byIdentity.has(item))
          byIdentity.get(item).push({ module, export: name, index: i, weight: value.length });
      });
    }
  }
}

const plugins = definitions.map((def) => {
  const homes = byIdentity.get(def).sort((a, b) => a.weight - b.weight || a.module.length - b.module.length);
  const home = homes[0];
  if (home === undefined)
    throw new Error(`plugin '${def.type}' is not exported by any module under plugins/`);
  const definition = {};
  for (const [key, value] of Object.entries(def)) {
    if (FUNCTION_KEYS.has(key) || (key === 'readsRequestBody' && typeof value === 'function')) continue;
    if (typeof value === 'function')
      throw new Error(`plugin '${def.type}': key '${key}' is a function the manifest cannot hold`);
    definition[key] = value;
  }
  // Schemas must survive JSON unchanged (no RegExp, no undefined, no functions).
  deepStrictEqual(
    JSON.parse(JSON.stringify(definition)),
    definition,
    `plugin '${def.type}' metadata is not plain JSON`,
  );
  return {
    type: def.type,
    module: home.module,
    export: home.export,
    ...(home.index === undefined ? {} : { index: home.index }),
    readsResponseBody: typeof def.readsResponseBody === 'function',
    ...(typeof def.readsRequestBody === 'function' ? { readsRequestBodyPerConfig: true } : {}),
    definition,
  };
});

writeFileSync(manifestPath, `${JSON.stringify({ plugins })}\n`);

const check = spawnSync(process.execPath, [import.meta.filename, dist, '--verify'], { stdio: 'inherit' });
if (check.status !== 0) process.exit(1);

/**
 * In a fresh process: the lazy registry lists the same types, every module loads synchronously
 * (as `create` will load it), and the manifest's metadata equals the module's.
 */
async function verify() {
  const lazy = await import(pathToFileURL(join(pluginsDir, 'index.js')).href);
  if (!lazy.pluginsLoadLazily) throw new Error('the built registry did not pick up manifest.json');
  if (lazy.loadedPluginTypes().size !== 0)
    throw new Error('the lazy registry imported plugin modules at startup');
  for (const [type, entry] of lazy.registry) {
    const def = lazy.pluginImplementation(type);
    for (const key of Object.keys(def)) {
      if (!FUNCTION_KEYS.has(key) && typeof def[key] !== 'function')
        deepStrictEqual(entry[key], def[key], `${type}.${key}`);
    }
    if ((typeof def.readsRequestBody === 'function') !== (typeof entry.readsRequestBody === 'function')) {
      throw new Error(`${type}: readsRequestBody differs between the manifest and the module`);
    }
    if ((def.readsResponseBody === undefined) !== (entry.readsResponseBody === undefined)) {
      throw new Error(`${type}: readsResponseBody differs between the manifest and the module`);
    }
  }
  const eager = await lazy.importAllPlugins();
  deepStrictEqual(
    [...lazy.registry.keys()],
    eager.map((d) => d.type),
  );
}
