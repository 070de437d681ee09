import type { NodeConfig, PluginEntry, PolicyConfig } from '../types.js';
import { supernodeEntry } from './graph.js';

/** What a graph edits: a policy, or a supernode's definition (docs/editor.md#supernodes). */
export type GraphKind = 'policies' | 'supernodes';

export type SupernodeDef = Omit<PolicyConfig, 'name'> & { name: string };

/** What a new graph starts as: a policy's listener → client, a supernode's input → output. */
export const starter = (name: string, kind: GraphKind): PolicyConfig =>
  kind === 'policies'
    ? {
        name,
        nodes: [
          { id: 'listener', type: 'listener' },
          { id: 'client', type: 'client' },
        ],
        edges: [{ from: 'listener.out', to: 'client.in' }],
      }
    : {
        name,
        nodes: [
          { id: 'input', type: 'input' },
          { id: 'output', type: 'output' },
        ],
        edges: [{ from: 'input.out', to: 'output.in' }],
      };

const boundary = (type: string, description: string, input: boolean, output: boolean): PluginEntry => ({
  type,
  description,
  category: 'boundaries',
  ports: {
    input: input ? 'The request context inside the supernode.' : null,
    outputs: output
      ? [{ name: 'success', kind: 'success', description: "Into the supernode: the instance's input." }]
      : [],
  },
  schema: { type: 'object', properties: {} },
  templated: [],
});

/** A supernode's ports inside its definition: not plugins, so not in /api/plugins. */
export const BOUNDARIES: PluginEntry[] = [
  boundary('input', "Where a request enters the supernode (its instance's input).", false, true),
  boundary(
    'output',
    "Where it leaves: the node called 'output' is the instance's success port, any other output node a port named by its id.",
    true,
    false,
  ),
  boundary('error', "Leaves through the instance's error port.", true, false),
];

export function withoutName(graph: PolicyConfig): Omit<PolicyConfig, 'name'> {
  const { name: _name, ...rest } = graph;
  return rest;
}

/** The catalog entry of a stored node; a supernode instance gets the ports of its definition. */
export function entryLookup(
  catalog: ReadonlyMap<string, PluginEntry>,
  supernodes: ReadonlyMap<string, SupernodeDef>,
): (node: NodeConfig) => PluginEntry | undefined {
  return (node) => {
    if (node.type !== 'supernode') return catalog.get(node.type);
    const ref = node.config?.name;
    return typeof ref === 'string' ? supernodeEntry(ref, supernodes.get(ref)) : undefined;
  };
}
