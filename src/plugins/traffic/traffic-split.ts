import { compileCondition, type Condition } from '../../conditions/index.js';
import type { Context } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { smoothWeighted } from '../../outbound/balancer/weighted.js';
import { UpstreamPool } from '../../outbound/upstream-pool.js';
import { ConfigError, definePlugin, type NodeInstance, type PluginEnv } from '../../core/plugin.js';
import { upstream, type UpstreamNode } from '../core/upstream.js';

interface TargetConfig {
  host: string;
  port: number;
  weight: number;
}

interface SlotConfig {
  upstream?: { targets: TargetConfig[] };
  /** A `plugin_configs` entry of type upstream: its targets, health checks, TLS and timeouts. */
  config_ref?: string;
  weight: number;
}

interface TrafficSplitConfig {
  rules: { match?: unknown[]; weighted_upstreams: SlotConfig[] }[];
  timeout_ms: number;
}

type SplitPort = 'success' | 'routed';

/** Where a slot's requests go: its own targets, or an upstream built from a shared config. */
type SlotBackend = { kind: 'pool'; pool: UpstreamPool } | { kind: 'upstream'; node: UpstreamNode };

interface Slot {
  weight: number;
  /** Null for the default slot: the request continues to the policy's own upstream. */
  backend: SlotBackend | null;
  /** For the smooth weighted picker: slots are never busy, and a weight of 0 is never picked. */
  active: 0;
  isAvailable(): boolean;
}

interface Rule {
  match: Condition | undefined;
  slots: Slot[];
  /** The picker's running score per slot; shared with the same rule of earlier reloads. */
  credit: Float64Array;
}

/**
 * Picker state by node and rule, kept in the gateway scope so a reload that
 * leaves a rule's weights as they were keeps its place in the sequence (a
 * frequent reload would otherwise restart it, and the first slots would get
 * every request).
 */
type Credits = Map<string, { weights: string; credit: Float64Array }>;
const MAX_REMEMBERED_RULES = 10000;

function creditFor(credits: Credits, key: string, weights: readonly number[]): Float64Array {
  const signature = weights.join(',');
  const known = credits.get(key);
  if (known !== undefined && known.weights === signature) return known.credit;
  if (credits.size >= MAX_REMEMBERED_RULES) credits.clear();
  const credit = new Float64Array(weights.length);
  credits.set(key, { weights: signature, credit });
  return credit;
}

/** Split targets take no part in passive health: the slot's weight is the whole contract. */
const NO_PASSIVE = { maxFails: 0, failTimeoutMs: 0 };

const clientIp = (ctx: Context): string => ctx.request.remoteAddress;

type SplitTargets = NonNullable<SlotConfig['upstream']>['targets'];

/**
 * Weighted or conditional steering: the first matching rule picks a slot by
 * weight; a slot with targets is proxied by this node (port `routed`), the
 * default slot and unmatched requests continue on `success`.
 */
export const trafficSplit = definePlugin({
  type: 'traffic-split',
  category: 'traffic',
  description:
    'Steer matching requests by weight (canary, blue-green): a slot with targets is proxied here and leaves on routed; the default slot continues on success.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['rules'],
    properties: {
      rules: {
        type: 'array',
        minItems: 1,
        description: 'The first rule whose match holds is used.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['weighted_upstreams'],
          properties: {
            match: {
              type: 'array',
              description: 'Condition expression (docs/conditions.md); absent matches all.',
            },
            weighted_upstreams: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  upstream: {
                    type: 'object',
                    additionalProperties: false,
                    required: ['targets'],
                    description: 'Targets proxied by this node (round-robin); absent = the default slot.',
                    properties: {
                      targets: {
                        type: 'array',
                        minItems: 1,
                        items: {
                          type: 'object',
                          additionalProperties: false,
                          required: ['host', 'port'],
                          properties: {
                            host: { type: 'string', minLength: 1 },
                            port: { type: 'integer', minimum: 1, maximum: 65535 },
                            weight: { type: 'integer', minimum: 1, default: 1 },
                          },
                        },
                      },
                    },
                  },
                  config_ref: {
                    type: 'string',
                    minLength: 1,
                    description:
                      'A plugin_configs entry of type upstream (targets, health checks, TLS); instead of upstream.',
                  },
                  weight: {
                    type: 'integer',
                    minimum: 0,
                    default: 1,
                    description: "Share of the rule's traffic.",
                  },
                },
              },
            },
          },
        },
      },
      timeout_ms: {
        type: 'integer',
        minimum: 1,
        default: 60000,
        description: 'Deadline of a proxied call (connect + headers, then idle body).',
      },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description: 'No rule matched or the default slot was picked; continue to the upstream.',
    },
    routed: {
      kind: 'outcome',
      description: 'The request was steered to and served by a weighted split target; wire to client.',
    },
  },
  readsResponseBody: () => false,
  // A routed answer streams unless a node reachable from `routed` reads the body (env.streaming).
  relaysOn: 'routed',
  create(config: TrafficSplitConfig, env) {
    return new TrafficSplitNode(config, env);
  },
});

export class TrafficSplitNode implements NodeInstance<SplitPort> {
  readonly #rules: Rule[];
  readonly #pools: UpstreamPool[] = [];
  /** One upstream per distinct `config_ref` of this node, whichever slots name it. */
  readonly #shared = new Map<string, UpstreamNode>();

  readonly #nodeId: string;

  constructor(config: TrafficSplitConfig, env: PluginEnv) {
    this.#nodeId = env.nodeId;
    try {
      this.#rules = config.rules.map((rule, i) => this.#compileRule(rule, i, config.timeout_ms, env));
    } catch (err) {
      this.close();
      throw err;
    }
  }

  #compileRule(
    rule: TrafficSplitConfig['rules'][number],
    i: number,
    timeoutMs: number,
    env: PluginEnv,
  ): Rule {
    const match = rule.match === undefined ? undefined : compileCondition(rule.match, `rules[${i}].match`);
    const slots = rule.weighted_upstreams.map((slot, j): Slot => ({
      weight: slot.weight,
      backend: this.#backend(slot, timeoutMs, env, `rules[${i}].weighted_upstreams[${j}]`),
      active: 0,
      isAvailable: () => slot.weight > 0,
    }));
    const totalWeight = slots.reduce((sum, s) => sum + s.weight, 0);
    if (totalWeight === 0) {
      throw new ConfigError(`rules[${i}].weighted_upstreams`, 'needs at least one slot with weight > 0');
    }
    const credit = creditFor(
      env.scope.shared<Credits>('traffic-split', () => new Map()),
      `${env.policy}\u0000${env.nodeId}\u0000${i}`,
      slots.map((slot) => slot.weight),
    );
    return { match, slots, credit };
  }

  #backend(slot: SlotConfig, timeoutMs: number, env: PluginEnv, at: string): SlotBackend | null {
    if (slot.config_ref !== undefined) {
      if (slot.upstream !== undefined)
        throw new ConfigError(`${at}.config_ref`, 'set either upstream or config_ref, not both');
      return { kind: 'upstream', node: this.#sharedUpstream(slot.config_ref, env, `${at}.config_ref`) };
    }
    if (slot.upstream === undefined) return null;
    return { kind: 'pool', pool: this.#pool(slot.upstream.targets, timeoutMs, env, at) };
  }

  /**
   * The upstream node a `config_ref` slot proxies through: created by the upstream plugin from the
   * shared config, so its health checks run and are shared through the gateway's HealthRegistry
   * with every upstream node probing the same target the same way (a reload keeps a down target
   * down), and its answer streams like theirs.
   */
  #sharedUpstream(name: string, env: PluginEnv, key: string): UpstreamNode {
    const known = this.#shared.get(name);
    if (known !== undefined) return known;
    if (env.sharedConfig === undefined)
      throw new ConfigError(key, 'needs the plugin_configs of a compiled configuration');
    const config = env.sharedConfig(name, 'upstream', key);
    let node: UpstreamNode;
    try {
      // The upstream plugin's create returns its UpstreamNode (typed by definePlugin as a NodeInstance).
      node = upstream.create(config, { ...env, nodeId: `${env.nodeId}/${name}` }) as UpstreamNode;
    } catch (err) {
      if (err instanceof ConfigError)
        throw new ConfigError(
          key,
          `plugin_configs '${name}': config${err.path === '' ? '' : `.${err.path}`} ${err.message}`,
        );
      throw err;
    }
    this.#shared.set(name, node);
    return node;
  }

  /** One shared-pool upstream per target slot: round-robin, connect failures retried on the slot's other targets. */
  #pool(targets: SplitTargets, timeoutMs: number, env: PluginEnv, slot: string): UpstreamPool {
    const pool = new UpstreamPool({
      targets: targets.map((t) => ({
        host: t.host.startsWith('[') ? t.host.slice(1, -1) : t.host,
        port: t.port,
        weight: t.weight,
      })),
      balancer: 'round_robin',
      hashKey: clientIp,
      scheme: 'http',
      tls: null,
      limits: { deadlineMs: timeoutMs, idleMs: timeoutMs, streaming: env.streaming },
      retries: targets.length - 1,
      passive: NO_PASSIVE,
      active: null,
      passHost: 'node',
      upstreamHost: '',
      logger: env.logger,
      where: { policy: env.policy, node: env.nodeId, slot },
    });
    this.#pools.push(pool);
    return pool;
  }

  run(ctx: Context): SplitPort | Promise<SplitPort> {
    const rule = this.#rules.find((r) => r.match === undefined || r.match.evaluate(ctx));
    if (rule === undefined) return 'success';
    const slot = pick(rule);
    if (slot.backend === null) return 'success';
    return forward(slot.backend, ctx);
  }

  /** The upstreams its `config_ref` slots proxy through, by the node id their metrics carry (`split/name`). */
  *innerUpstreams(): Iterable<{ id: string; node: UpstreamNode }> {
    for (const [name, node] of this.#shared) yield { id: `${this.#nodeId}/${name}`, node };
  }

  close(): void {
    for (const pool of this.#pools.splice(0)) pool.close();
    for (const node of this.#shared.values()) node.close();
    this.#shared.clear();
  }
}

/** Proxies through the slot's backend; any failure becomes the plugin's own code, with the outbound cause kept. */
async function forward(backend: SlotBackend, ctx: Context): Promise<'routed'> {
  try {
    if (backend.kind === 'pool') return await backend.pool.forward(ctx, 'routed');
    await backend.node.run(ctx);
    return 'routed';
  } catch (err) {
    const failure = err instanceof NodeError ? err : null;
    throw new NodeError('TRAFFIC_SPLIT_UPSTREAM_ERROR', 'traffic-split target unreachable', {
      metadata: {
        ...failure?.metadata,
        upstream_code: failure?.code ?? 'PLUGIN_ERROR',
        reason: failure?.message ?? String(err),
      },
      cause: err,
    });
  }
}

/** Smooth weighted round robin: 90/10 interleaves the canary instead of sending it ten in a row. */
function pick(rule: Rule): Slot {
  return smoothWeighted(rule.slots, rule.credit, 0, null, true) ?? rule.slots[0]!;
}
