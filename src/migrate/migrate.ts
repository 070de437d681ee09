import { YAMLSeq, isMap, isSeq, parseDocument, type Document, type YAMLMap } from 'yaml';
import { parseGatewayConfig, type GatewayConfig } from '../config/gateway.js';
import { issuesBesideShape } from '../config/shape-recovery.js';
import { parseYamlData } from '../config/yaml-data.js';
import { ConfigRejected, type ConfigIssue } from '../config/schema-validate.js';
import { compileWith } from '../gateway.js';
import { silentLogger } from '../core/logger.js';

/**
 * `switchyard migrate`: rewrites a gateway.yaml written for an earlier release
 * of the reference gateway so that it validates here. Works on the `yaml`
 * Document so comments and key order survive; a file that needs no change is
 * returned byte for byte.
 */
export interface MigrateOptions {
  env: NodeJS.ProcessEnv;
  /** The file's path: relative file references (Lua scripts…) resolve against its folder. */
  gatewayPath?: string;
  /** Remove node-config keys the node type's schema does not declare, listing each. */
  dropUnknownKeys?: boolean;
}

export interface MigrateResult {
  /** The migrated YAML (the input text unchanged when `changes` is empty). */
  text: string;
  /** One line per change, naming policy, node and port. */
  changes: string[];
  /** What migrate could not decide or fix on its own. */
  undecided: string[];
  /** Issues the migrated text still has; empty when it validates. */
  errors: ConfigIssue[];
}

/**
 * Keys the reference moved between releases: `[node type, old key, new key]`.
 * The reference's own documentation records no move that Switchyard does not
 * already accept as an alias (`load_balancer`, `role`, `cache_http_status`…),
 * so the table is empty; add a row here when a release moves a key.
 */
const KEY_RENAMES: readonly (readonly [type: string, from: string, to: string])[] = [];

const UNWIRED_NODE_PORT =
  /^policy '([^']*)': output port '([^']+)' of node '([^']+)' \(type '[^']+'\) must be wired —/;
const UNWIRED_INSTANCE_PORT =
  /^policy '([^']*)': output port '([^']+)' of supernode instance '([^']+)' must be wired —/;
const UNWIRED_IN_DEFINITION = /must be wired inside the definition/;
const UNKNOWN_KEY = /unknown key( \(did you mean '[^']+'\?\))?$/;
/** Rounds of compile → fix: wiring a port can bring the next layer of problems to light. */
const MAX_ROUNDS = 12;

export function migrateGatewayText(text: string, options: MigrateOptions): MigrateResult {
  const doc = parseDocument(text, { keepSourceTokens: false });
  if (doc.errors.length > 0) {
    return {
      text,
      changes: [],
      undecided: [],
      errors: doc.errors.map((e) => ({ path: '', message: `invalid YAML: ${e.message}` })),
    };
  }
  const changes: string[] = [];
  const undecided: string[] = [];
  renameMovedKeys(doc, changes);
  const clients = new Map<number, string>();
  let errors: ConfigIssue[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    errors = compileIssues(String(doc), options);
    let fixed = 0;
    for (const issue of errors) {
      if (options.dropUnknownKeys === true && UNKNOWN_KEY.test(issue.message)) {
        fixed += dropKey(doc, issue, changes, undecided);
        continue;
      }
      const node = UNWIRED_NODE_PORT.exec(issue.message) ?? UNWIRED_INSTANCE_PORT.exec(issue.message);
      const index = /^policies\[(\d+)\]/.exec(issue.path)?.[1];
      if (node === null || index === undefined) continue;
      const [, policyName = '', port = '', nodeId = ''] = node;
      const policy = doc.getIn(['policies', Number(index)], true);
      if (!isMap(policy)) continue;
      let client = clients.get(Number(index));
      if (client === undefined) {
        client = chooseClient(doc, policy, policyName, changes, undecided);
        clients.set(Number(index), client);
      }
      addEdge(doc, policy, `${nodeId}.${port}`, `${client}.in`);
      changes.push(
        `policy '${policyName}': wired ${nodeId}.${port} → ${client}.in (node '${nodeId}', port '${port}')`,
      );
      fixed++;
    }
    if (fixed === 0) break;
    if (round === MAX_ROUNDS - 1) errors = compileIssues(String(doc), options);
  }
  for (const issue of errors) {
    if (UNWIRED_IN_DEFINITION.test(issue.message)) {
      undecided.push(
        `${issue.path}: ${issue.message} (a supernode definition has no client node; wire it to the 'output' or 'error' boundary by hand)`,
      );
    }
  }
  return { text: changes.length === 0 ? text : render(doc, text), changes, undecided, errors };
}

/** The document in the source's own layout: sequence indentation as found, no line folding. */
function render(doc: Document, source: string): string {
  const indentSeq = !/^[A-Za-z_][\w-]*:[ \t]*\r?\n- /m.test(source);
  // The `yaml` package pads all flow collections or none: follow what most of the source does.
  const padded = source.match(/[[{] [^\s\]}]/g)?.length ?? 0;
  const tight = source.match(/[[{][^\s\]}]/g)?.length ?? 0;
  return doc.toString({ indentSeq, lineWidth: 0, flowCollectionPadding: padded >= tight });
}

/** The compiler's issues for `text`, or none when it compiles. */
export function compileIssues(text: string, options: MigrateOptions): ConfigIssue[] {
  const compile = (config: GatewayConfig): ConfigIssue[] => {
    try {
      void compileWith(config, silentLogger, options.env, options.gatewayPath).close();
      return [];
    } catch (err) {
      if (err instanceof ConfigRejected) return [...err.issues];
      throw err;
    }
  };
  let config: GatewayConfig;
  try {
    config = parseGatewayConfig(text);
  } catch (err) {
    if (!(err instanceof ConfigRejected)) throw err;
    // Every error in one pass (F19): the items the shape check did not name are compiled too.
    let raw: unknown;
    try {
      raw = parseYamlData(text);
    } catch {
      return [...err.issues];
    }
    return [...err.issues, ...issuesBesideShape(raw, err.issues, compile)];
  }
  return compile(config);
}

function renameMovedKeys(doc: Document, changes: string[]): void {
  if (KEY_RENAMES.length === 0) return;
  for (const section of ['policies', 'supernodes'] as const) {
    const graphs = doc.get(section, true);
    if (!isSeq(graphs)) continue;
    for (const graph of graphs.items) {
      if (!isMap(graph)) continue;
      const nodes = graph.get('nodes', true);
      if (!isSeq(nodes)) continue;
      for (const node of nodes.items) {
        if (!isMap(node)) continue;
        const type = node.get('type');
        const config = node.get('config', true);
        if (!isMap(config)) continue;
        for (const [forType, from, to] of KEY_RENAMES) {
          if (type !== forType || !config.has(from) || config.has(to)) continue;
          const pair = config.items.find(
            (p) => String((p.key as { value?: unknown }).value ?? p.key) === from,
          );
          if (pair === undefined) continue;
          pair.key = doc.createNode(to);
          changes.push(
            `${section} '${String(graph.get('name'))}': node '${String(node.get('id'))}': renamed config key '${from}' → '${to}'`,
          );
        }
      }
    }
  }
}

/**
 * The client node unwired ports go to: the policy's only one; among several,
 * the one its success path reaches; with none, a new `client` node.
 */
function chooseClient(
  doc: Document,
  policy: YAMLMap,
  policyName: string,
  changes: string[],
  undecided: string[],
): string {
  const nodes = nodeList(policy);
  const clients = nodes.filter((n) => n.type === 'client').map((n) => n.id);
  if (clients.length === 1 && clients[0] !== undefined) return clients[0];
  if (clients.length === 0) {
    const ids = new Set(nodes.map((n) => n.id));
    let id = 'client';
    for (let i = 2; ids.has(id); i++) id = `client-${i}`;
    const seq = seqOf(doc, policy, 'nodes');
    const added = doc.createNode({ id, type: 'client' });
    added.flow = lastItemIsFlow(seq);
    seq.add(added);
    changes.push(`policy '${policyName}': added client node '${id}' (the policy had none)`);
    return id;
  }
  const byId = new Map(nodes.map((n) => [n.id, n.type]));
  const next = new Map<string, string>();
  for (const { from, to } of edgeList(policy)) {
    const [id, port] = splitRef(from);
    if (port === 'out' || port === 'success') next.set(id, splitRef(to)[0]);
  }
  let current = nodes.find((n) => n.type === 'listener')?.id;
  for (let hops = 0; current !== undefined && hops < 64; hops++) {
    if (byId.get(current) === 'client') break;
    current = next.get(current);
  }
  const picked = current !== undefined && byId.get(current) === 'client' ? current : (clients[0] ?? 'client');
  undecided.push(
    `policy '${policyName}': ${clients.length} client nodes (${clients.join(', ')}); unwired ports go to '${picked}'${
      picked === current ? ', the one the success path reaches' : ' (the success path reaches none; check)'
    }`,
  );
  return picked;
}

/** Removes the unknown node-config key an issue points at (`policies[0].nodes[1].config.colour`). */
function dropKey(doc: Document, issue: ConfigIssue, changes: string[], undecided: string[]): number {
  const segments = pathSegments(issue.path);
  const configAt = segments.indexOf('config');
  if (configAt < 0 || segments.length <= configAt + 1) return 0;
  const where = issue.message.split(':').slice(0, 2).join(':');
  if (doc.getIn(segments, true) === undefined && !doc.hasIn(segments)) {
    undecided.push(
      `${issue.path}: unknown key not found in this file (a shared plugin_configs entry?); remove it by hand`,
    );
    return 0;
  }
  doc.deleteIn(segments);
  const hint = / \(did you mean '[^']+'\?\)$/.exec(issue.message)?.[0] ?? '';
  changes.push(`${where}: dropped unknown config key '${String(segments.at(-1))}' (${issue.path})${hint}`);
  return 1;
}

/** `policies[0].nodes[1].config.a["b c"]` → ['policies', 0, 'nodes', 1, 'config', 'a', 'b c']. */
function pathSegments(path: string): (string | number)[] {
  const segments: (string | number)[] = [];
  const token = /([A-Za-z_][\w-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g;
  for (const m of path.matchAll(token)) {
    if (m[1] !== undefined) segments.push(m[1]);
    else if (m[2] !== undefined) segments.push(Number(m[2]));
    else if (m[3] !== undefined) segments.push(JSON.parse(m[3]) as string);
  }
  return segments;
}

const ADDED_COMMENT = ' added by switchyard migrate: outcome ports earlier releases left unwired';

function addEdge(doc: Document, policy: YAMLMap, from: string, to: string): void {
  const seq = seqOf(doc, policy, 'edges');
  const edge = doc.createNode({ from, to });
  edge.flow = lastItemIsFlow(seq);
  // One marker line above the first edge migrate adds to a policy, so a reader sees where they start.
  if (!seq.items.some((e) => isMap(e) && e.commentBefore === ADDED_COMMENT))
    edge.commentBefore = ADDED_COMMENT;
  seq.add(edge);
}

/** The sequence under `key`, created (block style) when absent. */
function seqOf(doc: Document, map: YAMLMap, key: string): YAMLSeq {
  const found: unknown = map.get(key, true);
  if (isSeq(found)) return found;
  const created = new YAMLSeq();
  map.set(doc.createNode(key), created);
  return created;
}

function lastItemIsFlow(seq: YAMLSeq): boolean {
  const last = seq.items.at(-1);
  return isMap(last) && last.flow === true;
}

function nodeList(policy: YAMLMap): { id: string; type: string }[] {
  const seq = policy.get('nodes', true);
  if (!isSeq(seq)) return [];
  return seq.items.filter(isMap).map((n) => ({ id: String(n.get('id')), type: String(n.get('type')) }));
}

function edgeList(policy: YAMLMap): { from: string; to: string }[] {
  const seq = policy.get('edges', true);
  if (!isSeq(seq)) return [];
  return seq.items.filter(isMap).map((e) => ({ from: String(e.get('from')), to: String(e.get('to')) }));
}

/** `node.port` → [node, port]; a bare id has no port. */
function splitRef(ref: string): [string, string] {
  const dot = ref.lastIndexOf('.');
  return dot < 0 ? [ref, 'out'] : [ref.slice(0, dot), ref.slice(dot + 1)];
}
