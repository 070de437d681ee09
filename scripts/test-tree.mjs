// The tree `npm test` runs: src/ and test/ compiled to JavaScript by esbuild (one module per source,
// as scripts/build.mjs does for dist/) inside a shadow of the repository, so the test processes need
// no TypeScript loader. tsx's module hooks cost about 1.7 s of CPU per test process that imports the
// gateway, several minutes over the suite; its transpiling is cached, the hooks are not.
//
// The shadow root holds a symbolic link to every top-level entry of the repository (.git included,
// for `git ls-files`) except src/, test/, bench/ and ui/src/ (which tests import); in those, the compiled
// `.js` sits next to a link to each original file (the `.ts` sources too, for tests that read
// them). Paths a test derives from `import.meta.dirname` (`../..` is the repository root, fixtures
// next to the test) therefore lead to the same files.
// Each run builds its own tree (under node_modules/.cache/, which no linter walks) and removes it
// when it ends, so two runs at once never see each other's half-written tree.
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const cache = join(root, 'node_modules', '.cache', 'switchyard-test-tree');
const COMPILED = new Set(['src', 'test', 'bench']);
/** Top-level folders of which only some subfolders are compiled: tests import the editor's pure modules. */
const PARTLY_COMPILED = { ui: ['src'] };

/** Every file under `dir`, relative to the repository root. */
function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : [relative(root, path)];
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Removes the trees of runs that ended without cleaning up (killed, crashed). */
function removeStale() {
  if (!existsSync(cache)) return;
  for (const name of readdirSync(cache)) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || !alive(pid)) rmSync(join(cache, name), { recursive: true, force: true });
  }
}

/**
 * Builds the tree for this process and returns its root; it is removed when the process exits.
 * Returns undefined when esbuild is missing (the caller then runs the sources through tsx).
 */
export async function buildTestTree() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return undefined;
  }
  removeStale();
  const shadow = join(cache, String(process.pid));
  rmSync(shadow, { recursive: true, force: true });
  mkdirSync(shadow, { recursive: true });
  process.once('exit', () => rmSync(shadow, { recursive: true, force: true }));
  for (const name of readdirSync(root)) {
    if (COMPILED.has(name)) continue;
    const inside = PARTLY_COMPILED[name];
    if (inside === undefined) {
      symlinkSync(join(root, name), join(shadow, name));
      continue;
    }
    mkdirSync(join(shadow, name));
    // Its other entries, and dist/ even before the editor build makes it (a link may dangle until then).
    for (const entry of new Set([...readdirSync(join(root, name)), 'dist'])) {
      if (!inside.includes(entry)) symlinkSync(join(root, name, entry), join(shadow, name, entry));
    }
  }
  const dirs = [
    ...COMPILED,
    ...Object.entries(PARTLY_COMPILED).flatMap(([top, subs]) => subs.map((sub) => join(top, sub))),
  ];
  const all = dirs.flatMap((dir) => files(join(root, dir)));
  const sources = all.filter((path) => /\.tsx?$/.test(path) && !path.endsWith('.d.ts'));
  await esbuild.build({
    entryPoints: sources.map((path) => join(root, path)),
    outdir: shadow,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    bundle: false,
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  for (const path of all) {
    const link = join(shadow, path);
    if (existsSync(link)) continue;
    mkdirSync(join(link, '..'), { recursive: true });
    symlinkSync(join(root, path), link);
  }
  return shadow;
}
