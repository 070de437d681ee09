// SwitchyardPolicy, SwitchyardConsumer and SwitchyardGlobalRule (switchyard.dev/v1alpha1) → the
// supernodes, consumers and global rules of the translated configuration, and their statuses
// (docs/kubernetes.md#policy-graphs-switchyarddevv1alpha1). Pure, like translate.ts: checking a graph is the caller's
// `checkPolicy` (the source compiles it, src/plugins/check-policy-graph.ts).
import {
  consumerSchema,
  type ConsumerConfig,
  type GlobalRuleConfig,
  type SupernodeConfig,
} from '../config/gateway.js';
import { validateAgainst } from '../config/schema-validate.js';
import {
  SWITCHYARD_GROUP,
  SWITCHYARD_VERSION,
  type CredentialValue,
  type SwitchyardPolicy,
} from './crd-types.js';
import type { ClusterState, Condition, KObject, Secret } from './types.js';

/**
 * The compiler's verdict on one supernode definition run as a global rule (with the rule's params
 * and phase, or none: how an ExtensionRef runs it): undefined when it compiles, else the message.
 */
export type PolicyCheck = (
  supernode: SupernodeConfig,
  rule?: { params?: Record<string, unknown>; phase?: 'request' | 'response' },
) => string | undefined;

/** The name the supernode of SwitchyardPolicy ns/name has in the translated configuration. */
export function supernodeName(namespace: string, name: string): string {
  return `k8s.${namespace}.${name}`;
}

/** The consumer name of SwitchyardConsumer ns/name (X-Consumer-Username, consumer-restriction). */
export function consumerName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export interface CrdStatus {
  kind: 'SwitchyardPolicy' | 'SwitchyardConsumer' | 'SwitchyardGlobalRule';
  plural: 'switchyardpolicies' | 'switchyardconsumers' | 'switchyardglobalrules';
  group: string;
  version: string;
  namespace: string | undefined;
  name: string;
  status: Record<string, unknown>;
}

export interface CrdTranslation {
  supernodes: SupernodeConfig[];
  consumers: ConsumerConfig[];
  globalRules: GlobalRuleConfig[];
  /** ns/name of each SwitchyardPolicy that compiled: an ExtensionRef to any other answers 500. */
  valid: Set<string>;
  statuses: CrdStatus[];
}

/** `${…}` would read the gateway's environment or secret store: not from a namespace's object. */
function placeholder(value: unknown, path: string): string | undefined {
  if (typeof value === 'string')
    return value.includes('${') || /\{\{\s*env\./.test(value)
      ? `${path}: \${…} and {{env.…}} are not resolved in a SwitchyardPolicy (they would read the gateway's environment)`
      : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = placeholder(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      const found = placeholder(v, `${path}.${k}`);
      if (found !== undefined) return found;
    }
  return undefined;
}

function acceptedCondition(
  object: KObject & { status?: { conditions?: Condition[] } },
  problem: string | undefined,
  now: string,
): Condition[] {
  const next: Omit<Condition, 'lastTransitionTime'> =
    problem === undefined
      ? {
          type: 'Accepted',
          status: 'True',
          reason: 'Accepted',
          message: 'Compiled',
          observedGeneration: object.metadata.generation,
        }
      : {
          type: 'Accepted',
          status: 'False',
          reason: 'Invalid',
          message: problem,
          observedGeneration: object.metadata.generation,
        };
  const old = object.status?.conditions?.find((c) => c.type === 'Accepted');
  return [
    {
      ...next,
      lastTransitionTime: old !== undefined && old.status === next.status ? old.lastTransitionTime : now,
    },
  ];
}

function id(o: KObject): string {
  return `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
}

/** A credential field's value, or why it cannot be read (the Secret's value is never put in the message). */
function credentialValue(
  value: CredentialValue,
  namespace: string,
  secrets: Map<string, Secret>,
): string | boolean | { problem: string } {
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  const ref = value.secretKeyRef;
  const secret = secrets.get(`${namespace}/${ref.name}`);
  if (secret === undefined) return { problem: `Secret ${namespace}/${ref.name} not found` };
  const data = secret.data?.[ref.key];
  if (data === undefined) return { problem: `Secret ${namespace}/${ref.name} has no key ${ref.key}` };
  const text = Buffer.from(data, 'base64').toString('utf8');
  // No escape exists for `${…}` (src/config/interpolate.ts): such a value would read the gateway's env.
  if (text.includes('${'))
    return { problem: `Secret ${namespace}/${ref.name} key ${ref.key}: a value may not contain \${` };
  return text;
}

export function translateCrds(
  state: ClusterState,
  checkPolicy: PolicyCheck | undefined,
  now: string,
): CrdTranslation {
  const out: CrdTranslation = {
    supernodes: [],
    consumers: [],
    globalRules: [],
    valid: new Set(),
    statuses: [],
  };
  const status = (
    kind: CrdStatus['kind'],
    plural: CrdStatus['plural'],
    o: KObject & { status?: { conditions?: Condition[] } },
    problem: string | undefined,
  ) =>
    out.statuses.push({
      kind,
      plural,
      group: SWITCHYARD_GROUP,
      version: SWITCHYARD_VERSION,
      namespace: o.metadata.namespace ?? 'default',
      name: o.metadata.name,
      status: { conditions: acceptedCondition(o, problem, now) },
    });

  const policies = [...(state.switchyardPolicies ?? [])].sort((a, b) => id(a).localeCompare(id(b)));
  const byId = new Map<string, SwitchyardPolicy>();
  for (const p of policies) {
    const ns = p.metadata.namespace ?? 'default';
    const supernode: SupernodeConfig = {
      name: supernodeName(ns, p.metadata.name),
      ...(p.spec?.description === undefined ? {} : { description: p.spec.description }),
      ...(p.spec?.params === undefined ? {} : { params: p.spec.params }),
      nodes: p.spec?.nodes ?? [],
      edges: p.spec?.edges ?? [],
    };
    const problem = placeholder(p.spec ?? {}, 'spec') ?? checkPolicy?.(supernode);
    status('SwitchyardPolicy', 'switchyardpolicies', p, problem);
    if (problem !== undefined) continue;
    out.supernodes.push(supernode);
    out.valid.add(id(p));
    byId.set(id(p), p);
  }

  const secrets = new Map(state.secrets.map((s) => [id(s), s]));
  const consumers = [...(state.switchyardConsumers ?? [])].sort((a, b) => id(a).localeCompare(id(b)));
  for (const c of consumers) {
    const ns = c.metadata.namespace ?? 'default';
    let problem: string | undefined;
    const credentials: Record<string, Record<string, unknown>> = {};
    for (const [plugin, fields] of Object.entries(c.spec?.credentials ?? {})) {
      const resolved: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(fields)) {
        const v = credentialValue(value, ns, secrets);
        if (typeof v === 'object') {
          problem ??= `spec.credentials.${plugin}.${field}: ${v.problem}`;
          continue;
        }
        if (typeof v === 'string' && typeof value === 'string' && v.includes('${'))
          problem ??= `spec.credentials.${plugin}.${field}: \${…} is not resolved here; take the value from a Secret`;
        resolved[field] = v;
      }
      credentials[plugin] = resolved;
    }
    const consumer: ConsumerConfig = {
      name: consumerName(ns, c.metadata.name),
      ...(c.spec?.group === undefined ? {} : { group: c.spec.group }),
      ...(c.spec?.description === undefined ? {} : { description: c.spec.description }),
      ...(c.spec?.labels === undefined ? {} : { labels: c.spec.labels }),
      credentials,
    };
    problem ??= placeholder({ group: c.spec?.group, labels: c.spec?.labels }, 'spec');
    if (problem === undefined) {
      const issue = validateAgainst(consumerSchema, consumer, 'spec')[0];
      if (issue !== undefined)
        problem = `${issue.path.replace(/^spec\.name\b/, 'metadata.name')}: ${issue.message}`;
    }
    status('SwitchyardConsumer', 'switchyardconsumers', c, problem);
    if (problem === undefined) out.consumers.push(consumer);
  }

  // Global rules run in the order of their namespace/name (as etcd keys do, docs/global-rules.md).
  const rules = [...(state.switchyardGlobalRules ?? [])].sort((a, b) => id(a).localeCompare(id(b)));
  for (const r of rules) {
    const ns = r.metadata.namespace ?? 'default';
    const policy = r.spec?.policy;
    let problem: string | undefined;
    if (policy === undefined || policy === '') problem = 'spec.policy: required';
    else if (!byId.has(`${ns}/${policy}`))
      problem = (state.switchyardPolicies ?? []).some((p) => id(p) === `${ns}/${policy}`)
        ? `spec.policy: SwitchyardPolicy ${ns}/${policy} is not accepted`
        : `spec.policy: SwitchyardPolicy ${ns}/${policy} not found`;
    problem ??= placeholder(r.spec?.params ?? {}, 'spec.params');
    const rule: GlobalRuleConfig = {
      name: `k8s.${ns}.${r.metadata.name}`,
      supernode: supernodeName(ns, policy ?? ''),
      ...(r.spec?.params === undefined ? {} : { params: r.spec.params }),
      ...(r.spec?.phase === undefined ? {} : { phase: r.spec.phase }),
    };
    if (problem === undefined) {
      const supernode = out.supernodes.find((s) => s.name === rule.supernode);
      if (supernode !== undefined)
        problem = checkPolicy?.(supernode, {
          ...(rule.params === undefined ? {} : { params: rule.params }),
          ...(rule.phase === undefined ? {} : { phase: rule.phase }),
        });
    }
    status('SwitchyardGlobalRule', 'switchyardglobalrules', r, problem);
    if (problem === undefined) out.globalRules.push(rule);
  }
  return out;
}
