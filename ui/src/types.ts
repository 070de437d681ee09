/** The Admin API shapes the editor reads and writes (docs/admin-api.md). */

export interface RouteMatch {
  path?: string;
  methods?: string[];
  headers?: Record<string, string>;
  host?: string | null;
  hosts?: string[];
}

export interface RouteConfig {
  name: string;
  match: RouteMatch;
  policy: string;
  description?: string;
  /** Higher is tried first; equal priorities in list order (docs/routing.md#priority). */
  priority?: number;
}

export interface Position {
  x: number;
  y: number;
}

export interface NodeConfig {
  id: string;
  type: string;
  config?: Record<string, unknown> | null;
  config_ref?: string;
  position?: Position;
}

export interface EdgeConfig {
  from: string;
  to: string;
}

export interface PolicyConfig {
  name: string;
  description?: string;
  error_handler?: string;
  nodes: NodeConfig[];
  edges: EdgeConfig[];
}

export type PortKind = 'success' | 'outcome' | 'error';

export interface CatalogPort {
  name: string;
  kind: PortKind;
  description: string;
}

export interface PluginEntry {
  type: string;
  description: string;
  category: string;
  ports: { input: string | null; outputs: CatalogPort[] };
  schema: Record<string, unknown>;
  templated: string[];
}

export interface Issue {
  path: string;
  message: string;
}

export interface PolicyValidation {
  valid: boolean;
  errors: string[];
  warnings: string[];
  details: Issue[];
}

export interface Status {
  version: string;
  routes: number;
  policies: number;
  config_source: string;
  persist: boolean;
}
