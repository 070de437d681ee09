import { compileCondition, type Condition } from '../../conditions/index.js';
import type { Context } from '../../engine/context.js';
import { NodeError } from '../../engine/errors.js';
import { createBalancer } from '../../outbound/balancer/index.js';
import { selectTarget } from '../../outbound/balancer/select.js';
import type { Balancer } from '../../outbound/balancer/types.js';
import { classifyFailure } from '../../outbound/classify.js';
import { exchange, type ExchangeLimits } from '../../outbound/exchange.js';
import { acquirePool, type PoolLease } from '../../outbound/pool-registry.js';
import { buildRequestHeaders, cleanResponseHeaders } from '../../outbound/proxy-headers.js';
import { formatAddress, Target } from '../../outbound/target.js';
import { definePlugin, ConfigError, type NodeInstance } from '../define.js';

interface TargetConfig {
  host: string;
  port: number;
  weight: number;
}

interface SlotConfig {
  upstream?: { targets: TargetConfig[] };
  weight: number;
}

interface TrafficSplitConfig {
  rules: { match?: unknown[]; weighted_upstreams: SlotConfig[] }[];
  timeout_ms: number;
}

type SplitPort = 'success' | 'routed';

interface Slot {
  weight: number;
  /** Null for the default slot: the request continues to the policy's own upstream. */
  balancer: Balancer | null;
}

interface Rule {
  match: Condition | undefined;
  slots: Slot[];
  totalWeight: number;
  cursor: number;
}

/** Split targets take no part in passive health: the slot's weight is the whole contract. */
const NO_PASSIVE = { maxFails: 0, failTimeoutMs: 0 };

const clientIp = (ctx: Context): string => ctx.request.remoteAddress;

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
  create(config: TrafficSplitConfig) {
    return new TrafficSplitNode(config);
  },
});

class TrafficSplitNode implements NodeInstance<SplitPort> {
  readonly #rules: Rule[];
  readonly #leases: PoolLease[] = [];
  readonly #limits: ExchangeLimits;

  constructor(config: TrafficSplitConfig) {
    this.#limits = { deadlineMs: config.timeout_ms, idleMs: config.timeout_ms, streaming: false };
    try {
      this.#rules = config.rules.map((rule, i) => this.#compileRule(rule, i, config.timeout_ms));
    } catch (err) {
      this.close();
      throw err;
    }
  }

  #compileRule(rule: TrafficSplitConfig['rules'][number], i: number, timeoutMs: number): Rule {
    const match = rule.match === undefined ? undefined : compileCondition(rule.match, `rules[${i}].match`);
    const slots = rule.weighted_upstreams.map((slot): Slot => {
      if (slot.upstream === undefined) return { weight: slot.weight, balancer: null };
      const targets = slot.upstream.targets.map((t, k) => {
        const host = t.host.startsWith('[') ? t.host.slice(1, -1) : t.host;
        const lease = acquirePool({
          origin: `http://${formatAddress(host, t.port)}`,
          tls: null,
          connectTimeoutMs: timeoutMs,
        });
        this.#leases.push(lease);
        return new Target(k, { host, port: t.port, weight: t.weight }, lease.pool, NO_PASSIVE, null);
      });
      return { weight: slot.weight, balancer: createBalancer('round_robin', targets, clientIp) };
    });
    const totalWeight = slots.reduce((sum, s) => sum + s.weight, 0);
    if (totalWeight === 0) {
      throw new ConfigError(`rules[${i}].weighted_upstreams`, 'needs at least one slot with weight > 0');
    }
    return { match, slots, totalWeight, cursor: 0 };
  }

  run(ctx: Context): SplitPort | Promise<SplitPort> {
    const rule = this.#rules.find((r) => r.match === undefined || r.match.evaluate(ctx));
    if (rule === undefined) return 'success';
    const slot = pick(rule);
    if (slot.balancer === null) return 'success';
    return this.#proxy(ctx, selectTarget(slot.balancer, ctx, null));
  }

  async #proxy(ctx: Context, target: Target): Promise<'routed'> {
    const req = ctx.request;
    const outbound = {
      method: req.method,
      path: req.url,
      headers: buildRequestHeaders(req, target.address),
      body: req.body,
    };
    try {
      const res = await exchange(target.pool, outbound, this.#limits, ctx.signal, target);
      const response = ctx.response;
      response.discardStream();
      response.status = res.status;
      response.headers = cleanResponseHeaders(res.headers);
      response.body = res.body;
      return 'routed';
    } catch (err) {
      const failure = classifyFailure(err);
      throw new NodeError('TRAFFIC_SPLIT_UPSTREAM_ERROR', 'traffic-split target unreachable', {
        metadata: { target: target.address, reason: failure.reason },
        cause: err,
      });
    }
  }

  close(): void {
    for (const lease of this.#leases.splice(0)) lease.release();
  }
}

function pick(rule: Rule): Slot {
  const mark = rule.cursor;
  rule.cursor = (mark + 1) % rule.totalWeight;
  let acc = 0;
  for (const slot of rule.slots) {
    acc += slot.weight;
    if (mark < acc) return slot;
  }
  return rule.slots[rule.slots.length - 1]!;
}
