#!/usr/bin/env node
// Compiles src/**/*.ts into dist/ (one JavaScript module per source, same layout, so paths such as
// `new URL('../../ui/dist/', import.meta.url)` resolve the same) and writes the plugin manifest that
// lets the compiled gateway import a plugin's module only when a configuration uses its type.
// `npm ci` (prepare) and `npm start` (prestart) run it; it does nothing when dist/ is newer than
// every source. `--force` rebuilds regardless. See docs/deployment.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
const stampFile = join(dist, 'build-info.json');

/** Every path under `dir` (folders too: their mtime moves when a file is added, renamed or removed). */
function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? [path, ...walk(path)] : [path];
  });
}

function newestSource() {
  return Math.max(statSync(src).mtimeMs, ...walk(src).map((path) => statSync(path).mtimeMs));
}

if (!existsSync(src)) {
  // An installed package: dist/ ships prebuilt and there is nothing to compile.
  process.exit(0);
}
if (!process.argv.includes('--force') && existsSync(stampFile)) {
  const { builtAt } = JSON.parse(readFileSync(stampFile, 'utf8'));
  if (typeof builtAt === 'number' && newestSource() < builtAt) process.exit(0);
}

let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  // Installed without devDependencies and no prebuilt dist/: bin/switchyard.js runs the sources.
  console.warn('switchyard: esbuild is not installed, so dist/ was not built (the sources run through tsx)');
  process.exit(0);
}

const started = Date.now();
// Taken before any source is read: an edit made while this build runs leaves dist/ stale.
const builtAt = Date.now();
const entryPoints = walk(src).filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'));
const staging = `${dist}.tmp-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
await esbuild.build({
  entryPoints,
  outdir: staging,
  outbase: src,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  bundle: false,
  logLevel: 'warning',
});

// The bundled runtime packages, the plugin manifest (every type's metadata, and the module that
// defines it), then the precompiled schema validators; each in its own process, so nothing they
// import stays loaded.
for (const step of ['build-vendor.mjs', 'build-plugin-manifest.mjs', 'build-validators.mjs']) {
  const run = spawnSync(process.execPath, [join(import.meta.dirname, step), staging], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (run.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    console.error(`switchyard: ${step} failed; dist/ left unchanged`);
    process.exit(1);
  }
}

writeFileSync(
  join(staging, 'build-info.json'),
  `${JSON.stringify({ builtAt, files: entryPoints.length })}\n`,
);
// Swap in the finished tree so a gateway starting meanwhile never sees half a build.
const old = `${dist}.old-${process.pid}`;
try {
  renameSync(dist, old);
} catch {
  // No dist/ yet, or a concurrent build moved it away.
}
try {
  renameSync(staging, dist);
} catch (err) {
  // A concurrent build put its own dist/ in place first: keep that one.
  rmSync(staging, { recursive: true, force: true });
  if (!existsSync(stampFile)) throw err;
}
rmSync(old, { recursive: true, force: true });
console.log(
  `switchyard: compiled ${entryPoints.length} modules into ${relative(process.cwd(), dist) || 'dist'} in ${Date.now() - started} ms`,
);
