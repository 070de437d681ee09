import { readFileSync } from 'node:fs';
import { credentialsSchema, labelsSchema, type ConsumerConfig } from './consumers.js';

export type { ConsumerConfig } from './consumers.js';
import { ConfigRejected, validateAgainst, yamlSyntaxIssue } from './schema-validate.js';
import { parseYamlData } from './yaml-data.js';
import { policyTestsSchema, type PolicyTest } from './policy-tests.js';

export interface RouteMatch {
  path?: string;
  methods?: string[];
  headers?: Record<string, string>;
  /** `null` is the reference UI's "any host" (it serialises an unset host that way). */
  host?: string | null;
  hosts?: string[];
}

export interface RouteConfig {
  name: string;
  match: RouteMatch;
  policy: string;
  description?: string;
  /**
   * Match precedence: a higher priority is tried first, equal priorities in declaration order
   * (docs/routing.md#priority). An integer in ROUTE_PRIORITY_MIN..ROUTE_PRIORITY_MAX, default 0.
   */
  priority?: number;
}

export interface NodeConfig {
  id: string;
  type: string;
  config?: Record<string, unknown> | null;
  config_ref?: string;
  /** How `config` lays over the shared config: `shallow` (default) or `deep` (docs/shared-configs.md). */
  merge?: 'shallow' | 'deep';
  position?: { x: number; y: number };
}

export interface EdgeConfig {
  from: string;
  to: string;
}

export interface PolicyConfig {
  name: string;
  description?: string;
  error_handler?: string;
  /** `false`: the gateway's `global_rules` are not spliced into this policy (docs/global-rules.md). */
  global_rules?: boolean;
  nodes: NodeConfig[];
  edges: EdgeConfig[];
}

export interface SupernodeConfig {
  name: string;
  description?: string;
  /** Declared parameters, read as `{{params.<name>}}` inside (docs/supernodes.md#parameters). */
  params?: Record<string, SupernodeParamSpec>;
  nodes: NodeConfig[];
  edges: EdgeConfig[];
}

export interface SupernodeParamSpec {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array';
  default?: unknown;
  required?: boolean;
  description?: string;
}

export interface PluginConfigEntry {
  name: string;
  type: string;
  description?: string;
  /** Another shared config this one builds on (docs/shared-configs.md#chains). */
  config_ref?: string;
  merge?: 'shallow' | 'deep';
  config: Record<string, unknown>;
}

/**
 * One `global_rules:` entry: a supernode spliced after every policy's listener, or with
 * `phase: response` before every client node (docs/global-rules.md).
 */
export interface GlobalRuleConfig {
  name: string;
  supernode: string;
  description?: string;
  params?: Record<string, unknown>;
  /** `request` (absent: the default) or `response`. */
  phase?: 'request' | 'response';
}

export interface StoreConfig {
  name: string;
  type: string;
  description?: string;
  /** Required for standalone stores; sentinel and cluster stores use `urls`. */
  url?: string;
  password?: string;
  key_prefix?: string;
  /** `standalone` (default, uses `url`), `sentinel` or `cluster` (use `urls`); docs/stores.md. */
  topology?: string;
  urls?: string[];
  master_name?: string;
  sentinel_password?: string;
  /** A number, or a string with `${ENV}` placeholders resolved at compile time. */
  connect_timeout_ms?: number | string;
  connect_budget_ms?: number | string;
  tls?: { ca_cert_path?: string };
}

/** gateway.yaml as stored: `${ENV}` placeholders are kept and resolved at compile time. */
export interface GatewayConfig {
  routes: RouteConfig[];
  policies: PolicyConfig[];
  consumers: ConsumerConfig[];
  supernodes: SupernodeConfig[];
  plugin_configs: PluginConfigEntry[];
  stores: StoreConfig[];
  global_rules: GlobalRuleConfig[];
  /** Policy tests for `switchyard test` (docs/config-as-code.md#policy-tests); the gateway ignores them. */
  tests?: PolicyTest[];
}

/**
 * L8: names of routes, policies, consumers… are 1–128 characters with no
 * control characters (C0, DEL, C1, U+2028/2029); anything else printable is
 * allowed, spaces included (the compat corpus uses `[a-z0-9-]`), as long as it is well-formed
 * Unicode: a lone UTF-16 surrogate (`x\ud800`) is refused (review F-7: it broke the `Location` of a
 * write after the commit; Ajv matches patterns per code point, so pairs pass). Descriptions
 * are at most 4096 characters. Header names of `match.headers` are RFC 9110
 * tokens. Every limit applies to gateway.yaml files and Admin writes alike.
 */
export const NAME_MAX_LENGTH = 128;
export const DESCRIPTION_MAX_LENGTH = 4096;
const NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\ud800-\\udfff]+$';
/** RFC 9110 §5.1 field-name = token. */
const TOKEN_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

const name = { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH, pattern: NAME_PATTERN } as const;
/** A route's `priority` (docs/routing.md#priority): a 32-bit signed integer, default 0. */
export const ROUTE_PRIORITY_MIN = -2147483648;
export const ROUTE_PRIORITY_MAX = 2147483647;
const description = { type: 'string', maxLength: DESCRIPTION_MAX_LENGTH } as const;
const named = { name } as const;

const nodeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type'],
  properties: {
    id: { type: 'string', minLength: 1 },
    type: { type: 'string', minLength: 1 },
    config: { type: ['object', 'null'] },
    config_ref: { type: 'string', minLength: 1 },
    merge: { type: 'string', enum: ['shallow', 'deep'] },
    position: {
      type: 'object',
      properties: { x: { type: 'number' }, y: { type: 'number' } },
    },
  },
} as const;

const edgeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to'],
  properties: { from: { type: 'string', minLength: 1 }, to: { type: 'string', minLength: 1 } },
} as const;

const graphProps = {
  ...named,
  description,
  nodes: { type: 'array', items: nodeSchema, default: [] },
  edges: { type: 'array', items: edgeSchema, default: [] },
} as const;

export const routeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'match', 'policy'],
  properties: {
    ...named,
    description,
    policy: { type: 'string', minLength: 1 },
    priority: { type: 'integer', minimum: ROUTE_PRIORITY_MIN, maximum: ROUTE_PRIORITY_MAX },
    match: {
      type: 'object',
      additionalProperties: false,
      properties: {
        path: { type: 'string' },
        methods: { type: 'array', items: { type: 'string' } },
        headers: {
          type: 'object',
          propertyNames: { pattern: TOKEN_PATTERN },
          additionalProperties: { type: 'string' },
        },
        // Nullable: with type coercion on, a plain 'string' would turn null into '' ("empty host").
        host: { type: ['string', 'null'] },
        hosts: { type: 'array', items: { type: 'string' } },
      },
    },
  },
} as const;

export const policySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    ...graphProps,
    error_handler: { type: 'string', minLength: 1 },
    global_rules: { type: 'boolean' },
  },
} as const;

const paramSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['string', 'number', 'integer', 'boolean', 'object', 'array'] },
    default: {},
    required: { type: 'boolean' },
    description,
  },
} as const;

export const supernodeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    ...graphProps,
    params: {
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      additionalProperties: paramSpecSchema,
    },
  },
} as const;

export const globalRuleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'supernode'],
  properties: {
    ...named,
    description,
    supernode: { type: 'string', minLength: 1 },
    params: { type: 'object' },
    phase: { type: 'string', enum: ['request', 'response'] },
  },
} as const;

export const pluginConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type'],
  properties: {
    ...named,
    type: { type: 'string', minLength: 1 },
    description,
    config_ref: { type: 'string', minLength: 1 },
    merge: { type: 'string', enum: ['shallow', 'deep'] },
    config: { type: 'object', default: {} },
  },
} as const;

export const storeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type'],
  properties: {
    ...named,
    type: { type: 'string', enum: ['redis', 'valkey'] },
    description,
    url: { type: 'string', minLength: 1 },
    password: { type: 'string' },
    key_prefix: { type: 'string' },
    topology: { type: 'string' },
    urls: { type: 'array', items: { type: 'string' } },
    master_name: { type: 'string' },
    sentinel_password: { type: 'string' },
    connect_timeout_ms: { type: ['integer', 'string'] },
    connect_budget_ms: { type: ['integer', 'string'] },
    tls: { type: 'object', additionalProperties: false, properties: { ca_cert_path: { type: 'string' } } },
  },
} as const;

export const consumerSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    ...named,
    group: { type: 'string', minLength: 1 },
    description,
    labels: labelsSchema,
    credentials: credentialsSchema,
  },
} as const;

export const gatewaySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    routes: { type: 'array', items: routeSchema, default: [] },
    policies: { type: 'array', items: policySchema, default: [] },
    consumers: { type: 'array', items: consumerSchema, default: [] },
    supernodes: { type: 'array', items: supernodeSchema, default: [] },
    plugin_configs: { type: 'array', items: pluginConfigSchema, default: [] },
    stores: { type: 'array', items: storeSchema, default: [] },
    global_rules: { type: 'array', items: globalRuleSchema, default: [] },
    tests: policyTestsSchema,
  },
} as const;

/** Parses gateway.yaml text into its stored form (placeholders kept) and checks the document shape. */
export function parseGatewayConfig(text: string): GatewayConfig {
  let raw: unknown;
  try {
    raw = parseYamlData(text) ?? {};
  } catch (err) {
    throw new ConfigRejected([yamlSyntaxIssue(err)]);
  }
  return checkGatewayShape(raw);
}

/** gateway.yaml's data before any shape check; undefined when it cannot be read or parsed. */
export function readGatewayItems(path: string): unknown {
  try {
    return parseYamlData(readFileSync(path).toString('utf8')) ?? {};
  } catch {
    return undefined;
  }
}

/** The top-level lists of gateway.yaml. */
export const GATEWAY_SECTIONS = [
  'routes',
  'policies',
  'consumers',
  'supernodes',
  'plugin_configs',
  'stores',
  'global_rules',
] as const;

export function checkGatewayShape(raw: unknown): GatewayConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigRejected([{ path: '', message: 'gateway config must be a mapping' }]);
  }
  for (const key of GATEWAY_SECTIONS) {
    if ((raw as Record<string, unknown>)[key] === null) delete (raw as Record<string, unknown>)[key];
  }
  // Coercion must not turn `${PORT}` placeholders in structure into numbers: the schema here only covers structure.
  const issues = validateAgainst(gatewaySchema, raw, '', { suggestKeys: true });
  if (issues.length > 0) throw new ConfigRejected(issues);
  return raw as GatewayConfig;
}

export function loadGatewayConfig(path: string): GatewayConfig {
  let text: string;
  try {
    // Decoding the Buffer is faster than readFileSync's own utf8 path (~90 vs ~140 ms for 5.8 MB).
    text = readFileSync(path).toString('utf8');
  } catch (err) {
    throw new ConfigRejected([{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }]);
  }
  return parseGatewayConfig(text);
}

export function emptyGatewayConfig(): GatewayConfig {
  return {
    routes: [],
    policies: [],
    consumers: [],
    supernodes: [],
    plugin_configs: [],
    stores: [],
    global_rules: [],
  };
}
