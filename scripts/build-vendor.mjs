#!/usr/bin/env node
// Bundles the runtime packages the gateway loads on every start (or on its first upstream
// request) into one CommonJS file each, <dist>/vendor/<name>.cjs, and points the compiled modules
// at them. Loading prom-client, pino or undici from node_modules resolves and compiles tens to
// over a hundred files each; one file per package takes about half the time and less memory
// (docs/benchmarks.md, "Startup"). The packages stay dependencies: the sources and the tests use
// them as installed, and the bundles are made from exactly those versions. Run by scripts/build.mjs.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const dist = process.argv[2];
if (dist === undefined) throw new Error('usage: build-vendor.mjs <dist dir>');
const require = createRequire(import.meta.url);
const esbuild = await import('esbuild');

/** The packages bundled. Each must be CommonJS-safe to bundle: no files it reads by path at run time. */
export const VENDORED = ['prom-client', 'pino', 'undici'];

const vendorDir = join(dist, 'vendor');
for (const name of VENDORED) {
  const outfile = join(vendorDir, `${name}.cjs`);
  await esbuild.build({
    stdin: { contents: `module.exports = require(${JSON.stringify(name)});`, resolveDir: process.cwd() },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'error',
    legalComments: 'inline',
  });
  // Node finds the named exports of a CommonJS module for `import { x } from` by reading its
  // text; a bundle assigns module.exports at run time, so name them the way it can read.
  // `default` is left out: it is a reserved word there, and an import's default is module.exports.
  const names = Object.keys(require(name)).filter(
    (key) => /^[A-Za-z_$][\w$]*$/.test(key) && key !== 'default',
  );
  const annotation = `\n0 && (module.exports = { ${names.join(', ')} });\n`;
  writeFileSync(outfile, readFileSync(outfile, 'utf8') + annotation);
}

/** Every compiled module under `dir`, vendor/ excluded. */
function modules(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === vendorDir ? [] : modules(path);
    return entry.name.endsWith('.js') ? [path] : [];
  });
}

// `from "undici"`, `import("undici")` and `require("undici")` (also through createRequire) name
// the package by a bare string literal in esbuild's output.
const bare = new RegExp(`(from\\s*|\\(\\s*)"(${VENDORED.join('|')})"`, 'g');
const namedImport = /^import \{([^}]*)\} from ("(?:\.\.?\/)+vendor\/[\w-]+\.cjs");$/gm;
let rewritten = 0;
for (const file of modules(dist)) {
  const text = readFileSync(file, 'utf8');
  if (!VENDORED.some((name) => text.includes(`"${name}"`))) continue;
  let next = text.replace(bare, (_match, lead, name) => {
    let path = relative(dirname(file), join(vendorDir, `${name}.cjs`));
    if (!path.startsWith('.')) path = `./${path}`;
    return `${lead}${JSON.stringify(path)}`;
  });
  // `import { a, b as c } from "…/vendor/x.cjs"` becomes a require(): an ES import of a CommonJS
  // file makes Node scan its whole text for export names first (about 10 ms for these bundles).
  let required = false;
  next = next.replace(namedImport, (_match, names, path) => {
    required = true;
    return `const {${names.replace(/\s+as\s+/g, ': ')}} = __vendorRequire(${path});`;
  });
  if (required)
    next = `import { createRequire as __vendorCreateRequire } from "node:module";\nconst __vendorRequire = __vendorCreateRequire(import.meta.url);\n${next}`;
  if (next !== text) {
    writeFileSync(file, next);
    rewritten++;
  }
}
console.log(`switchyard: bundled ${VENDORED.join(', ')} into vendor/ (${rewritten} modules point at them)`);
