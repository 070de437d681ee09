import type { Context } from './context.js';
import type { ConsumerIndex } from './consumers.js';
import type { Logger } from './logger.js';
import type { StoreLookup } from './store.js';
import type { GatewayScope } from './gateway-scope.js';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

export type JsonSchema = Record<string, unknown>;

export type PortKind = 'success' | 'outcome' | 'error';

export interface PortSpec {
  kind: PortKind;
  description?: string;
}

/** What a node's `run` returns: the name of the port it leaves through. */
export type PortResult<P extends string> = P | 'error';

export interface NodeInstance<P extends string = string> {
  /** Sync when the node needs no I/O: the engine costs no promise then. Throw `NodeError` to fail. */
  run(ctx: Context): PortResult<P> | Promise<PortResult<P>>;
  /** Called when the runtime holding this node is retired (pools, timers). */
  close?(): void | Promise<void>;
  /** Set by response-cache halves: the compiler checks pairs with it, the Admin API purges through it. */
  readonly cache?: CacheTarget;
}

/** A string parsed once at compile time; rendering per request only concatenates. */
export interface Template {
  readonly source: string;
  /** True when the template has no reference: `render` always returns `source`-derived text. */
  readonly isStatic: boolean;
  render(ctx: Context): string;
}

export interface TemplateOptions {
  /** Also run the legacy `$name` / `${name}` pass (only the fifteen legacy field groups). */
  legacy?: boolean;
  /** `request` (default) renders `response.status` as 0. */
  phase?: 'request' | 'response';
}

/** Everything a node may need from the gateway, handed over at compile time. */
export interface PluginEnv {
  readonly policy: string;
  readonly nodeId: string;
  readonly logger: Logger;
  /** True for an upstream whose success path never reads the response body (docs/configuration.md#streaming). */
  readonly streaming: boolean;
  /** Records a load-time warning with policy/node/key coordinates. */
  warn(key: string, message: string): void;
  /** Parses a templated config field; `key` is its path in the node config, for warnings. */
  template(text: string, key: string, options?: TemplateOptions): Template;
  /** The configuration's `consumers:` section, for auth nodes with `use_consumers: true`. */
  readonly consumers: ConsumerIndex;
  /** Directory of gateway.yaml; undefined when the config did not come from a file. */
  readonly configDir: string | undefined;
  /** The configuration's `stores:`, resolved at compile time; an unknown name is a ConfigError in `create`. */
  readonly stores: StoreLookup;
  /** Gateway-lifetime settings, metrics and shared state (local limit counters, the local cache). */
  readonly scope: GatewayScope;
  /**
   * The effective config of the `plugin_configs` entry `name` for a node of `type` (chain merged,
   * `${ENV}` resolved, schema defaults applied), e.g. a traffic-split slot's `config_ref` to an
   * upstream config. Throws a ConfigError at `key` when it is missing, of another type or invalid.
   * Absent outside a compile (tests that build an env by hand).
   */
  readonly sharedConfig?: (name: string, type: string, key: string) => Record<string, unknown>;
}

export type { ConsumerIndex, ConsumerRecord } from './consumers.js';
export type { GatewayScope } from './gateway-scope.js';

/** What one response-cache node tells the compiler and the Admin API about itself (`NodeInstance.cache`). */
export interface CacheTarget {
  /** Namespace shared by the halves of a pair. */
  readonly id: string;
  readonly phase: 'lookup' | 'store' | 'purge';
  /** `local` (this process) or `redis` (a named store, shared by every instance). */
  readonly backend: 'local' | 'redis';
  /** The `stores:` name for `redis`; '' for `local`. */
  readonly store: string;
  /** Removes every entry of namespace `id` from this backend; resolves to how many went. */
  purge(): Promise<number>;
}

/** Raised by `create` for a semantic config problem; `path` is relative to the node's config. */
export class ConfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface PluginDefinition<C = Record<string, unknown>, P extends string = string> {
  type: string;
  description: string;
  /** Category for the catalog and the editor's drawer. */
  category: string;
  /** JSON Schema of `config`; defaults are applied and scalars coerced before `create`. */
  schema: JsonSchema;
  /** Output ports besides the implicit `error` (present unless `noErrorPort`). */
  outputs: Record<P, PortSpec>;
  /** Structural nodes (listener) have no error port. */
  noErrorPort?: boolean;
  /** Input port name, `null` for the listener. */
  input?: string | null;
  /** Config field paths rendered with `{{…}}` templates. */
  templated?: readonly string[];
  /** Set by nodes that fetch a response (upstream): they may relay it as it arrives. */
  relaysResponse?: boolean;
  /**
   * A node that fetches a response on another port than `success` (traffic-split's `routed`):
   * `env.streaming` says whether nothing reachable from that port reads the response body.
   * Unlike `relaysResponse`, the node is not mocked by `switchyard test`.
   */
  relaysOn?: string;
  /** Whether this instance reads the response body; drives streaming inference. */
  readsResponseBody?(config: C): boolean;
  /**
   * `false` declares that the node never reads (nor replaces) `ctx.request.body`, so a policy made
   * only of such nodes streams request bodies to the upstream (docs/routing.md#request-bodies); a
   * function decides per instance (e.g. only when a template or condition of its config names the
   * body). Absent means it may: the body is buffered.
   */
  readsRequestBody?: boolean | ((config: C) => boolean);
  create(config: C, env: PluginEnv): NodeInstance<P>;
}

/**
 * The config `create` receives for a node whose schema is `S`: the type `S` describes, with every
 * key that has a `default` present (defaults are applied before `create`). `unknown` when `S` is
 * not a literal schema (built at run time or widened): such a definition annotates `create`'s config.
 */
export type ConfigOf<S> = S extends JSONSchema ? FromSchema<S> : unknown;

/**
 * Identity helper that keeps the port types of a plugin definition and derives its config type
 * from `schema` (read as a `const` literal): `create` and the per-instance callbacks receive
 * `ConfigOf<typeof schema>`, so no interface restates the schema.
 */
export function definePlugin<const S extends JsonSchema, P extends string>(
  def: PluginDefinition<ConfigOf<S>, P> & { schema: S },
): PluginDefinition<ConfigOf<S>, P> {
  return def;
}

/**
 * Schema annotation of a config key naming a file or folder the node reads when it is created
 * (`{ type: 'string', [READS_FILE]: true }`): a reload compiles a policy holding one again, so an
 * edited file is read again (src/engine/file-keys.ts). Keys that only look like files
 * (`health_check.active.path`, a logger's `path`) carry no annotation.
 */
export const READS_FILE = 'x-reads-file';

export const PORT_DESCRIPTIONS = {
  success: 'The node completed normally; the request continues.',
  error: 'The node failed (configuration, parse, or infrastructure error).',
  input: 'Request context from the previous node.',
} as const;
