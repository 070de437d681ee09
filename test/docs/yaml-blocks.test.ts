/**
 * F8, F9 (operator review 3): every ```yaml block of docs/ is checked by the real validators, so
 * an example copied from the docs works as written. A block is classified by its top-level keys:
 *
 * - a gateway.yaml document (routes, policies, consumers, stores, …): parsed and compiled whole;
 * - a system.yaml document (listener, admin, tls, …): parsed with its schema and cross-field rules;
 * - a policy body (`nodes:` / `edges:`), a node list or one node: each node's type must exist and
 *   its config pass the plugin's schema; each edge must be `{ from: node.port, to: node.in }` and
 *   name an existing output port of a node the block declares;
 * - on a plugin's page (docs/plugins/<type>.md), a `config:` mapping: that plugin's schema.
 *
 * - on a migration page (docs/migrating-from-kong.md, -apisix.md), a Kong or APISIX file: imported
 *   with every item mapped, and the gateway.yaml it becomes compiled.
 *
 * A block that is a piece of one of these and cannot stand alone starts with a `# fragment` line
 * (docs/configuration.md#examples-in-these-docs); it must still be valid YAML.
 * `${NAME}` placeholders read an environment where every variable is set.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { importKong } from '../../src/migrate/import-kong.js';
import { importApisix } from '../../src/migrate/import-apisix.js';
import { ImportReport } from '../../src/migrate/import-report.js';
import { compileIssues } from '../../src/migrate/migrate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { systemSchema } from '../../src/config/system-schema.js';
import { gatewaySchema, parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected, validateAgainst, type ConfigIssue } from '../../src/config/schema-validate.js';
import { interpolateEnv, interpolateLeaves } from '../../src/config/interpolate.js';
import { registry } from '../../src/plugins/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCS = join(ROOT, 'docs');

interface Block {
  file: string;
  line: number;
  text: string;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownFiles(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

function yamlBlocks(): Block[] {
  const blocks: Block[] = [];
  for (const path of markdownFiles(DOCS)) {
    const source = readFileSync(path, 'utf8');
    for (const m of source.matchAll(/^```ya?ml[^\n]*\n([\s\S]*?)^```/gm)) {
      const line = source.slice(0, m.index).split('\n').length;
      blocks.push({ file: relative(ROOT, path), line, text: m[1]! });
    }
  }
  return blocks;
}

/** Every variable is set: URLs, ports and secrets each get a value of their kind. */
const env: NodeJS.ProcessEnv = new Proxy(
  {},
  {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      if (/REDIS|VALKEY/.test(name)) return 'redis://127.0.0.1:6379';
      if (/URL|URI|ENDPOINT/.test(name)) return 'http://127.0.0.1:8080';
      if (/PORT/.test(name)) return '8080';
      return `docs-example-${name.toLowerCase()}-0123456789`;
    },
    has: () => true,
  },
);

const GATEWAY_KEYS = new Set(Object.keys(gatewaySchema.properties));
const SYSTEM_KEYS = new Set(Object.keys(systemSchema.properties));

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function rejectedBy(run: () => unknown): ConfigIssue[] {
  try {
    run();
    return [];
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues;
    throw err;
  }
}

/** Issues of nodes and edges outside a full policy: node types, configs, edge shapes and ports. */
function graphPieceIssues(nodes: unknown[], edges: unknown[]): string[] {
  const issues: string[] = [];
  const declared = new Map<string, string>();
  nodes.forEach((node, i) => {
    if (!isObject(node) || typeof node.id !== 'string' || typeof node.type !== 'string') {
      issues.push(`nodes[${i}]: a node needs an id and a type`);
      return;
    }
    declared.set(node.id, node.type);
    // A supernode instance and a supernode's boundaries are checked by the policy that uses them.
    if (['supernode', 'input', 'output'].includes(node.type)) return;
    const def = registry.get(node.type);
    if (def === undefined) {
      issues.push(`nodes[${i}]: unknown node type '${node.type}'`);
      return;
    }
    if (node.config_ref !== undefined) return;
    const config = interpolateLeaves(structuredClone(node.config ?? {}), env);
    for (const issue of validateAgainst(def.schema, config, `nodes[${i}].config`, { suggestKeys: true }))
      issues.push(`${issue.path}: ${issue.message}`);
  });
  edges.forEach((edge, i) => {
    const ends = isObject(edge) ? [edge.from, edge.to] : [];
    if (!ends.every((e) => typeof e === 'string' && /^[^.]+\.[^.]+$/.test(e)) || ends.length !== 2) {
      issues.push(`edges[${i}]: an edge is { from: node.port, to: node.in }`);
      return;
    }
    const [from, to] = ends as [string, string];
    if (!to.endsWith('.in')) issues.push(`edges[${i}]: the target port is 'in' (${to})`);
    const [id, port] = from.split('.') as [string, string];
    const def = registry.get(declared.get(id) ?? '');
    if (def === undefined) return;
    const ports = new Set([...Object.keys(def.outputs), 'error', 'out']);
    if (!ports.has(port)) issues.push(`edges[${i}]: node '${id}' has no output port '${port}'`);
  });
  return issues;
}

/** `over` laid on `base` key by key (mappings merged, everything else replaced). */
function overlay(base: unknown, over: unknown): unknown {
  if (!isObject(base) || !isObject(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = overlay(base[k], v);
  return out;
}

const SHIPPED_SYSTEM_TEXT = readFileSync(join(ROOT, 'config/system.yaml'), 'utf8');
const SHIPPED_SYSTEM = parse(SHIPPED_SYSTEM_TEXT) as unknown;
/** The shipped file's own variables are unset (their defaults apply); every other one is set. */
const shippedVars = new Set([...SHIPPED_SYSTEM_TEXT.matchAll(/\$\{([A-Z0-9_]+)/g)].map((m) => m[1]));
const systemEnv: NodeJS.ProcessEnv = new Proxy(
  {},
  {
    get: (_target, name) =>
      typeof name === 'string' && shippedVars.has(name) ? undefined : env[name as string],
  },
);

/** The nodes of every policy and supernode of a gateway document. */
const allNodes = (doc: Record<string, unknown>): unknown[] =>
  [...((doc.policies as unknown[]) ?? []), ...((doc.supernodes as unknown[]) ?? [])].flatMap((p) =>
    isObject(p) && Array.isArray(p.nodes) ? (p.nodes as unknown[]) : [],
  );

/**
 * A Kong or APISIX file on its migration page: it is the importer's input, so it must import with
 * every item mapped and the gateway.yaml it becomes must compile.
 */
function importedIssues(file: string, doc: Record<string, unknown>): string[] | undefined {
  const importer =
    file === 'docs/migrating-from-kong.md' && '_format_version' in doc
      ? importKong
      : file === 'docs/migrating-from-apisix.md' && ('routes' in doc || 'upstreams' in doc)
        ? importApisix
        : undefined;
  if (importer === undefined) return undefined;
  const report = new ImportReport();
  const { gateway } = importer(doc, report);
  return [
    ...report.unmapped.map((e) => `not mapped: ${JSON.stringify(e)}`),
    ...compileIssues(stringify(gateway), { env }).map((i) => `imported: ${i.path}: ${i.message}`),
  ];
}

function check(block: Block): string[] {
  const fragment = /^\s*#\s*fragment\b/.test(block.text);
  let doc: unknown;
  try {
    doc = parse(block.text);
  } catch (err) {
    return [`not valid YAML: ${(err as Error).message.split('\n')[0]}`];
  }
  const imported = isObject(doc) ? importedIssues(block.file, doc) : undefined;
  if (imported !== undefined) return imported;
  const keys = isObject(doc) ? Object.keys(doc) : [];
  if (isObject(doc) && keys.length > 0 && keys.every((k) => GATEWAY_KEYS.has(k))) {
    // A fragment (routes naming policies it does not show, a policy without its listener): its
    // shape and every node config; a whole document compiles.
    if (fragment)
      return [
        ...rejectedBy(() => parseGatewayConfig(block.text)).map((i) => `${i.path}: ${i.message}`),
        ...graphPieceIssues(allNodes(doc), []),
      ];
    return compileIssues(block.text, { env }).map((i) => `${i.path}: ${i.message}`);
  }
  if (isObject(doc) && keys.length > 0 && keys.every((k) => SYSTEM_KEYS.has(k))) {
    // A system.yaml block shows the sections it is about: read on top of the shipped file. A file
    // it names (a certificate, a CA) is not on this machine.
    const text = JSON.stringify(overlay(SHIPPED_SYSTEM, doc));
    // A fragment (a section that needs another one the block does not show): its schema.
    if (fragment)
      return validateAgainst(systemSchema, parse(interpolateEnv(text, systemEnv)), '', {
        suggestKeys: true,
      }).map((i) => `${i.path}: ${i.message}`);
    return rejectedBy(() => parseSystemConfig(text, systemEnv))
      .filter((i) => !/cannot read '?\/.*ENOENT/.test(i.message))
      .map((i) => `${i.path}: ${i.message}`);
  }
  if (fragment) return [];
  if (
    isObject(doc) &&
    'nodes' in doc &&
    keys.every((k) => ['name', 'nodes', 'edges', 'error_handler'].includes(k))
  ) {
    return graphPieceIssues((doc.nodes as unknown[]) ?? [], (doc.edges as unknown[] | undefined) ?? []);
  }
  if (isObject(doc) && keys.length === 1 && Array.isArray(doc.edges)) return graphPieceIssues([], doc.edges);
  if (Array.isArray(doc) && doc.every((n) => isObject(n) && 'id' in n && 'type' in n))
    return graphPieceIssues(doc, []);
  if (isObject(doc) && typeof doc.id === 'string' && typeof doc.type === 'string')
    return graphPieceIssues([doc], []);
  const page = /^docs\/plugins\/([a-z0-9-]+)\.md$/.exec(block.file)?.[1];
  const def = page === undefined ? undefined : registry.get(page);
  if (def !== undefined && isObject(doc) && keys.length === 1 && isObject(doc.config)) {
    return graphPieceIssues([{ id: 'example', type: page, config: doc.config }], []);
  }
  return [
    `cannot tell what this block is (top-level keys: ${keys.join(', ') || typeof doc}); mark a piece with a first line '# fragment'`,
  ];
}

const blocks = yamlBlocks();

test('F8/F9: the docs hold YAML examples to check', () => {
  assert.ok(blocks.length > 100, `${blocks.length} blocks`);
});

for (const block of blocks) {
  test(`F8/F9: ${block.file}:${block.line} validates as written`, () => {
    const issues = check(block);
    assert.deepEqual(issues, [], `${block.file}:${block.line}\n${issues.join('\n')}\n---\n${block.text}`);
  });
}
