#!/usr/bin/env node
// Writes <dist>/validators/: one generated Ajv validator per static schema (system.yaml,
// gateway.yaml and its sections, every node type's config) and index.json listing their keys, for
// scripts/build.mjs. src/config/precompiled-validators.ts loads one when a schema with the same
// JSON is first validated, so startup compiles no schema (docs/deployment.md).
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = process.argv[2];
if (dist === undefined) throw new Error('usage: build-validators.mjs <dist dir>');
const load = (path) => import(pathToFileURL(join(dist, path)).href);

const { AJV_OPTIONS } = await load('config/schema-validate.js');
const { schemaKey } = await load('config/precompiled-validators.js');
const require = createRequire(import.meta.url);
const { Ajv } = require('ajv');
const standaloneCode = require('ajv/dist/standalone').default;

/** Exported `…Schema` objects of the config and admin modules, and every plugin's config schema. */
const schemas = [];
for (const folder of ['config', 'admin']) {
  for (const name of readdirSync(join(dist, folder)).filter((n) => n.endsWith('.js'))) {
    const module = await load(`${folder}/${name}`);
    for (const [exported, value] of Object.entries(module)) {
      if (exported.endsWith('Schema') && typeof value === 'object' && value !== null) schemas.push(value);
    }
  }
}
const { plugins } = JSON.parse(readFileSync(join(dist, 'plugins', 'manifest.json'), 'utf8'));
for (const plugin of plugins) schemas.push(plugin.definition.schema);

const out = join(dist, 'validators');
mkdirSync(out, { recursive: true });
const keys = new Set();
for (const schema of schemas) {
  const key = schemaKey(schema);
  if (keys.has(key)) continue;
  // A fresh instance per schema, so each generated module holds exactly one validator.
  const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } });
  writeFileSync(join(out, `${key}.cjs`), standaloneCode(ajv, ajv.compile(schema)));
  keys.add(key);
}
writeFileSync(join(out, 'index.json'), `${JSON.stringify([...keys])}\n`);
console.log(`switchyard: precompiled ${keys.size} schema validators`);
