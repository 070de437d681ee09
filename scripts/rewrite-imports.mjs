#!/usr/bin/env node
// Moves source files and rewrites every relative import that names them, so that a layout change
// (docs/architecture.md) is one re-runnable step rather than hundreds of hand edits.
//
//   node scripts/rewrite-imports.mjs [--map scripts/moves.json] [--no-move] [--no-format] [--dry-run]
//
// The map is a JSON object { "old/path.ts": "new/path.ts", ... }, paths from the repository root.
// For each entry whose old file still exists and whose new one does not, the file is moved with
// `git mv`. Then every .ts/.tsx/.mts/.js/.mjs file under src/, test/, bench/, ui/ and scripts/ is
// read, and each relative specifier that no longer resolves is pointed at the file's new place:
// first as written, then as it was written before the importing file itself moved (and a path
// into the build, `dist('core/logger.js')`, is repointed the same way, as is a file a moved module
// reads beside itself, `new URL('../package.json', import.meta.url)`). Specifiers
// that resolve are left alone, so running it again (say after a rebase brought new importers of
// an old path) only touches what is still stale. The files it rewrote are then run through prettier.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const mapFlag = args.indexOf('--map');
const mapPath = resolve(root, mapFlag >= 0 ? args[mapFlag + 1] : 'scripts/moves.json');
const dryRun = args.includes('--dry-run');
const move = !args.includes('--no-move') && !dryRun;

const moves = new Map(
  Object.entries(JSON.parse(readFileSync(mapPath, 'utf8'))).map(([from, to]) => [
    join(root, from),
    join(root, to),
  ]),
);
const movedFrom = new Map([...moves].map(([from, to]) => [to, from]));

if (move) {
  for (const [from, to] of moves) {
    if (!existsSync(from) || existsSync(to)) continue;
    mkdirSync(dirname(to), { recursive: true });
    execFileSync('git', ['mv', relative(root, from), relative(root, to)], { cwd: root, stdio: 'inherit' });
    console.log(`moved ${relative(root, from)} -> ${relative(root, to)}`);
  }
}

const CODE = /\.(ts|tsx|mts|js|mjs)$/;
const SKIP = new Set(['node_modules', 'dist', '.git', 'fixtures']);
function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return walk(path);
    return CODE.test(entry.name) ? [path] : [];
  });
}

/** The file a specifier names, or undefined: `x.js` may be x.ts / x.tsx; a folder its index. */
function target(fromDir, specifier) {
  const base = resolve(fromDir, specifier);
  const stem = base.replace(/\.(m?js|jsx)$/, '');
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, join(base, 'index.ts')]) {
    if (CODE.test(candidate) && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The path a vanished file went to, following chained moves. */
function followMoves(path) {
  const stem = path.replace(/\.(m?js|jsx|ts|tsx|mts)$/, '');
  for (const candidate of [path, `${stem}.ts`, `${stem}.tsx`, join(path, 'index.ts')]) {
    let now = candidate;
    const seen = new Set();
    while (moves.has(now) && !seen.has(now)) {
      seen.add(now);
      now = moves.get(now);
    }
    if (now !== candidate && existsSync(now)) return now;
  }
  return undefined;
}

function specifierFor(fromDir, file, written) {
  let spec = relative(fromDir, file).split(sep).join('/');
  if (!spec.startsWith('.')) spec = `./${spec}`;
  // Keep the importer's style: `.js` for TypeScript sources, the real extension otherwise.
  if (/\.(ts|tsx|mts)$/.test(file) && !/\.(ts|tsx)$/.test(written))
    spec = spec.replace(/\.(ts|tsx)$/, '.js').replace(/\.mts$/, '.mjs');
  return spec;
}

const DIST_PATH = /(?<=\b(?:dist|fromDist)\()(['"])([a-z][\w-]*(?:\/[\w-]+)+\.js)\1/g;
const URL_PATH = /\bnew URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
const SPECIFIER =
  /((?:\bfrom|^\s*import|\bimport\s*\(|\bexport\s*\*\s*from)\s*['"])(\.{1,2}\/[^'"]+)(['"])/gm;
const rewritten = [];
let changedSpecifiers = 0;
for (const file of ['src', 'test', 'bench', 'ui', 'scripts'].flatMap((dir) => walk(join(root, dir)))) {
  const text = readFileSync(file, 'utf8');
  const dir = dirname(file);
  const oldDir = dirname(movedFrom.get(file) ?? file);
  let count = 0;
  let next = text.replace(SPECIFIER, (whole, head, specifier, tail) => {
    if (target(dir, specifier) !== undefined) return whole;
    const moved = followMoves(resolve(dir, specifier)) ?? followMoves(resolve(oldDir, specifier));
    const unmoved = moved ?? target(oldDir, specifier);
    if (unmoved === undefined) return whole;
    count += 1;
    return `${head}${specifierFor(dir, unmoved, specifier)}${tail}`;
  });
  // Paths inside the build named from its root (`dist('core/logger.js')` in tests and benchmarks).
  next = next.replace(DIST_PATH, (whole, quote, path) => {
    const moved = followMoves(join(root, 'src', path.replace(/\.js$/, '.ts')));
    if (moved === undefined || !moved.startsWith(join(root, 'src') + sep)) return whole;
    count += 1;
    return `${quote}${relative(join(root, 'src'), moved).split(sep).join('/').replace(/\.ts$/, '.js')}${quote}`;
  });
  // Files read beside the module (`new URL('../../package.json', import.meta.url)`) stay where they were.
  next = next.replace(URL_PATH, (whole, quote, path) => {
    if (existsSync(resolve(dir, path)) || !existsSync(resolve(oldDir, path))) return whole;
    count += 1;
    let spec = relative(dir, resolve(oldDir, path)).split(sep).join('/');
    if (!spec.startsWith('.')) spec = `./${spec}`;
    return whole.replace(
      `${quote}${path}${quote}`,
      `${quote}${spec}${path.endsWith('/') ? '/' : ''}${quote}`,
    );
  });
  if (count === 0) continue;
  rewritten.push(file);
  changedSpecifiers += count;
  if (!dryRun) writeFileSync(file, next);
  if (dryRun) console.log(`would rewrite ${count} import(s) in ${relative(root, file)}`);
}
// A longer path can push an import past the line width: let prettier lay out what was touched.
if (!dryRun && rewritten.length > 0 && !args.includes('--no-format')) {
  execFileSync(
    'npx',
    ['prettier', '--write', '--log-level', 'warn', ...rewritten.map((file) => relative(root, file))],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
}
console.log(
  `rewrite-imports: ${changedSpecifiers} import(s) in ${rewritten.length} file(s)${dryRun ? ' (dry run)' : ''}`,
);
