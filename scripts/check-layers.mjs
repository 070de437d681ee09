#!/usr/bin/env node
// The layering check (docs/architecture.md): every relative import in src/ must point to the
// same layer or one below it, the folders must import each other without a cycle, and no two
// files may import each other in a loop (type-only imports count too).
//
// The order of the layers is read from the table between the `layers:begin` and `layers:end`
// markers in docs/architecture.md, so the page and the check cannot disagree. Each row names a
// layer and its units: a unit is a folder directly under src/ (`engine/`) or a file (`cli.ts`).
//
//   node scripts/check-layers.mjs [--root DIR] [--graph]
//
// --root checks another tree laid out the same way (the test uses a tiny fake one); --graph also
// prints every folder arrow with its count. Exits 1 and names each offending import otherwise.
import { existsSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SOURCE = /\.(ts|tsx|mts)$/;
const DOC = 'docs/architecture.md';

/** The layers, bottom first: [{ name, units: ['core', 'cli.ts', ...] }]. */
export function readLayers(root) {
  const text = readFileSync(join(root, DOC), 'utf8');
  const block = /<!--\s*layers:begin\s*-->([\s\S]*?)<!--\s*layers:end\s*-->/.exec(text);
  if (block === null) throw new Error(`${DOC}: no <!-- layers:begin --> ... <!-- layers:end --> table`);
  const layers = [];
  for (const line of block[1].split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    // | n | name | units | owns |
    if (cells.length < 5 || !/^\d+$/.test(cells[1])) continue;
    const units = [...cells[3].matchAll(/`([^`]+)`/g)].map((m) =>
      m[1].replace(/^src\//, '').replace(/\/$/, ''),
    );
    layers.push({ rank: Number(cells[1]), name: cells[2], units });
  }
  if (layers.length === 0) throw new Error(`${DOC}: the layers table has no rows`);
  layers.sort((a, b) => a.rank - b.rank);
  return layers;
}

function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return walk(path);
    return SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Comments out, so an example import in a comment draws no arrow. Strings are kept. */
function stripComments(code) {
  return code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** Relative specifiers of static, re-export, side-effect and literal dynamic imports. */
export function importsOf(code) {
  const text = stripComments(code);
  const found = [];
  const patterns = [
    /^\s*(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) if (match[1].startsWith('.')) found.push(match[1]);
  }
  return found;
}

function resolveImport(fromFile, specifier) {
  const base = resolve(dirname(fromFile), specifier);
  const stem = base.replace(/\.(m?js|jsx)$/, '');
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, join(base, 'index.ts')]) {
    if (SOURCE.test(candidate) && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Tarjan's strongly connected components; returns those with more than one member. */
function cycles(nodes, edges) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const found = [];
  const visit = (node) => {
    const entry = { index, low: index, onStack: true };
    index += 1;
    state.set(node, entry);
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      const seen = state.get(next);
      if (seen === undefined) {
        visit(next);
        entry.low = Math.min(entry.low, state.get(next).low);
      } else if (seen.onStack) entry.low = Math.min(entry.low, seen.index);
    }
    if (entry.low === entry.index) {
      const members = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        members.push(member);
      } while (member !== node);
      if (members.length > 1) found.push(members.sort());
    }
  };
  for (const node of nodes) if (!state.has(node)) visit(node);
  return found;
}

/** Checks the tree at root; returns { problems: string[], folderEdges: Map<string, number> }. */
export function checkLayers(root) {
  const layers = readLayers(root);
  const rankOf = new Map();
  for (const layer of layers) for (const unit of layer.units) rankOf.set(unit, layer.rank);
  const src = join(root, 'src');
  const files = walk(src);
  const unitOf = (file) => relative(src, file).split(sep)[0];
  const name = (file) => relative(root, file).split(sep).join('/');
  const problems = [];

  const unplaced = new Set(files.map(unitOf).filter((unit) => !rankOf.has(unit)));
  for (const unit of unplaced) problems.push(`src/${unit} has no layer in ${DOC}`);

  const fileEdges = new Map();
  const folderEdges = new Map();
  const folderGraph = new Map();
  for (const file of files) {
    const targets = new Set();
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
      const target = resolveImport(file, specifier);
      if (target === undefined || !target.startsWith(src + sep)) continue;
      targets.add(target);
      const from = unitOf(file);
      const to = unitOf(target);
      if (from === to) continue;
      const key = `${from} -> ${to}`;
      folderEdges.set(key, (folderEdges.get(key) ?? 0) + 1);
      if (!folderGraph.has(from)) folderGraph.set(from, new Set());
      folderGraph.get(from).add(to);
      const [fromRank, toRank] = [rankOf.get(from), rankOf.get(to)];
      if (fromRank !== undefined && toRank !== undefined && toRank > fromRank) {
        problems.push(
          `upward import: ${name(file)} imports ${name(target)} (layer ${fromRank} -> ${toRank})`,
        );
      }
    }
    fileEdges.set(file, targets);
  }
  for (const members of cycles([...folderGraph.keys()], folderGraph)) {
    problems.push(`folder cycle: ${members.map((unit) => `src/${unit}`).join(', ')}`);
  }
  for (const members of cycles(files, fileEdges)) {
    problems.push(`file cycle: ${members.map(name).join(', ')}`);
  }
  return { problems, folderEdges, layers };
}

// Through a symbolic link too (the compiled test tree links scripts/): compare real paths.
if (import.meta.filename === realpathSync(resolve(process.argv[1] ?? '.'))) {
  const args = process.argv.slice(2);
  const rootFlag = args.indexOf('--root');
  const root = resolve(rootFlag >= 0 ? args[rootFlag + 1] : join(import.meta.dirname, '..'));
  const { problems, folderEdges, layers } = checkLayers(root);
  if (args.includes('--graph')) {
    for (const [edge, count] of [...folderEdges].sort()) console.log(`${count}\t${edge}`);
  }
  if (problems.length > 0) {
    for (const problem of problems) console.error(problem);
    console.error(`check-layers: ${problems.length} problem(s); the allowed order is in ${DOC}`);
    process.exit(1);
  }
  console.log(
    `check-layers: ${layers.length} layers, ${folderEdges.size} folder arrows, none upward, no cycles`,
  );
}
