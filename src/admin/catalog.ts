import { PORT_DESCRIPTIONS, type PluginDefinition, type PortKind } from '../core/plugin.js';

export interface CatalogPort {
  name: string;
  kind: PortKind;
  description: string;
}

export interface CatalogEntry {
  type: string;
  description: string;
  category: string;
  ports: { input: string | null; outputs: CatalogPort[] };
  schema: Record<string, unknown>;
  templated: string[];
}

/**
 * Descriptions for ports whose definition carries none (the reference's
 * wording, docs/plugins/README.md). A definition's own
 * `description` always wins, e.g. an interactive auth's `denied`.
 */
const FALLBACK_PORT_TEXT: Record<string, string> = {
  success: PORT_DESCRIPTIONS.success,
  error: PORT_DESCRIPTIONS.error,
  preflight: 'OPTIONS preflight answered with a prepared 204; wire to client.',
  redirect: 'A 3xx redirect response is prepared; wire to client.',
  abort: 'An injected fault response is prepared; wire to client.',
  denied:
    'Authentication or authorization was denied; a 4xx response is prepared. Wire to client (or a custom denial handler).',
  limited: 'The request exceeded a traffic limit; a 429 response is prepared. Wire to client.',
  broken: 'The circuit breaker is open; the break response is prepared. Wire to client.',
  routed: 'The request was steered to and served by a weighted split target; wire to client.',
  hit: 'The response was served from cache; wire to client.',
  true: 'The conditions evaluated to true.',
  false: 'The conditions evaluated to false.',
};

/** Input descriptions that differ from the generic one. */
const INPUT_TEXT: Record<string, string> = {
  client: 'Final context; the response is sent to the client.',
};

function describePort(name: string, kind: PortKind, own: string | undefined): string {
  return (
    own ?? FALLBACK_PORT_TEXT[name] ?? (kind === 'outcome' ? `The node left through '${name}'; wire it.` : '')
  );
}

/** One `GET /api/plugins` entry, read straight from the plugin definition. */
export function catalogEntry(def: PluginDefinition<never, string>): CatalogEntry {
  const outputs: CatalogPort[] = Object.entries(def.outputs).map(([name, spec]) => ({
    name,
    kind: spec.kind,
    description: describePort(name, spec.kind, spec.description),
  }));
  if (def.noErrorPort !== true && !outputs.some((p) => p.name === 'error')) {
    outputs.push({ name: 'error', kind: 'error', description: PORT_DESCRIPTIONS.error });
  }
  return {
    type: def.type,
    description: def.description,
    category: def.category,
    ports: {
      input: def.input === null ? null : (INPUT_TEXT[def.type] ?? PORT_DESCRIPTIONS.input),
      outputs,
    },
    schema: def.schema,
    templated: [...(def.templated ?? [])],
  };
}

export function pluginCatalog(registry: ReadonlyMap<string, PluginDefinition<never, string>>): {
  plugins: CatalogEntry[];
} {
  return { plugins: [...registry.values()].map(catalogEntry) };
}
