import type { GatewayConfig } from '../../../config/gateway.js';
import {
  pluginConfigReferences,
  policyReferences,
  storeReferences,
  supernodeReferences,
} from '../../references.js';
import { resourceKinds, type ResourceKind, type Section } from '../../resources.js';
import type { Gateway } from '../../../gateway.js';

/** One resource kind as the MCP tools name it: `list_<plural>`, `get_<singular>`, `put_<singular>`. */
export interface ToolKind {
  section: Section;
  /** `route`, `plugin_config`: the tool-name suffix and the label in messages. */
  singular: string;
  /** `routes`, `plugin_configs`. */
  plural: string;
  /** What a get shows the agent besides the item: who uses it, as labels. */
  referencedBy?(gateway: Gateway, config: GatewayConfig, name: string): string[];
}

const labels = (refs: { label: string }[]): string[] => refs.map((r) => r.label);

export const TOOL_KINDS: readonly ToolKind[] = [
  { section: 'routes', singular: 'route', plural: 'routes' },
  {
    section: 'policies',
    singular: 'policy',
    plural: 'policies',
    referencedBy: (_g, config, name) => labels(policyReferences(config, name)),
  },
  {
    section: 'supernodes',
    singular: 'supernode',
    plural: 'supernodes',
    referencedBy: (_g, config, name) => labels(supernodeReferences(config, name)),
  },
  {
    section: 'plugin_configs',
    singular: 'plugin_config',
    plural: 'plugin_configs',
    referencedBy: (_g, config, name) => labels(pluginConfigReferences(config, name)),
  },
  {
    section: 'stores',
    singular: 'store',
    plural: 'stores',
    referencedBy: (g, config, name) => labels(storeReferences(config, name, g.system.acme)),
  },
  { section: 'consumers', singular: 'consumer', plural: 'consumers' },
  { section: 'global_rules', singular: 'global_rule', plural: 'global_rules' },
];

/** The Admin API's definition of a section (schema, upsert rule, delete guard). */
export function adminKind(gateway: Gateway, section: Section): ResourceKind {
  const kind = resourceKinds(gateway).find((k) => k.section === section);
  if (kind === undefined) throw new Error(`no admin resource kind for '${section}'`);
  return kind;
}
