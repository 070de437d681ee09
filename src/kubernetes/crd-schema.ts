// The CustomResourceDefinitions of switchyard.dev/v1alpha1 (deploy/helm/switchyard/crds/), their
// OpenAPI v3 schemas derived from the gateway.yaml schemas: the supernode definition
// (src/config/gateway.ts), the node types of the plugin registry, the consumer credentials
// (src/config/consumers.ts). scripts/build-crds.mjs writes them; test/kubernetes/crd-files.test.ts
// checks that the committed files are what this gives. A node's `config` is kept as written
// (x-kubernetes-preserve-unknown-fields) and checked by the controller with the compiler's
// errors (status Accepted False, reason Invalid): the per-type schemas differ by `type`, which a
// structural schema cannot express.
import { stringify } from 'yaml';
import { globalRuleSchema, supernodeSchema } from '../config/gateway.js';
import { credentialsSchema, labelsSchema } from '../config/consumers.js';
import { SWITCHYARD_GROUP, SWITCHYARD_VERSION } from './crd-types.js';

type Json = Record<string, unknown>;

/** Node types that are not plugins: the boundaries and the supernode instance (docs/supernodes.md). */
const STRUCTURAL_TYPES = ['input', 'output', 'error', 'supernode'];

/** JSON Schema (the Ajv subset gateway.yaml uses) → a structural OpenAPI v3 schema. */
export function toOpenApi(schema: Json): Json {
  const out: Json = {};
  if (Object.keys(schema).length === 0) return { 'x-kubernetes-preserve-unknown-fields': true };
  let type = schema['type'];
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null');
    if (types.length < type.length) out['nullable'] = true;
    if (types.length !== 1) return { ...out, 'x-kubernetes-preserve-unknown-fields': true };
    type = types[0];
  }
  if (typeof type === 'string') out['type'] = type;
  for (const k of [
    'description',
    'enum',
    'minLength',
    'maxLength',
    'pattern',
    'minimum',
    'maximum',
    'minItems',
  ])
    if (schema[k] !== undefined) out[k] = schema[k];
  if (schema['required'] !== undefined) out['required'] = schema['required'];
  const properties = schema['properties'] as Record<string, Json> | undefined;
  if (properties !== undefined)
    out['properties'] = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, toOpenApi(v)]));
  const additional = schema['additionalProperties'];
  if (typeof additional === 'object' && additional !== null)
    out['additionalProperties'] = toOpenApi(additional as Json);
  else if (type === 'object' && properties === undefined) out['x-kubernetes-preserve-unknown-fields'] = true;
  if (schema['items'] !== undefined) out['items'] = toOpenApi(schema['items'] as Json);
  return out;
}

const conditionsStatus: Json = {
  type: 'object',
  properties: {
    conditions: {
      type: 'array',
      description:
        'Accepted: True (reason Accepted), or False (reason Invalid) with the message of the problem.',
      items: {
        type: 'object',
        required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'],
        properties: {
          type: { type: 'string' },
          status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
          reason: { type: 'string' },
          message: { type: 'string' },
          observedGeneration: { type: 'integer', format: 'int64' },
          lastTransitionTime: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
};

function crd(kind: string, plural: string, description: string, spec: Json): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${SWITCHYARD_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'switchyard' },
    },
    spec: {
      group: SWITCHYARD_GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Namespaced',
      versions: [
        {
          name: SWITCHYARD_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Accepted',
              type: 'string',
              jsonPath: '.status.conditions[?(@.type=="Accepted")].status',
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description,
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status: conditionsStatus,
              },
            },
          },
        },
      ],
    },
  };
}

/** The three CRDs, each as the file name and text committed under deploy/helm/switchyard/crds/. */
export function crdFiles(nodeTypes: readonly string[]): { file: string; text: string }[] {
  // The supernode definition without its name (metadata.name is the name).
  const { name: _name, ...graph } = supernodeSchema.properties;
  const policySpec = toOpenApi({ type: 'object', properties: graph });
  const nodes = (policySpec['properties'] as Record<string, Json>)['nodes'] as Json;
  const node = nodes['items'] as Json;
  const types = [...new Set([...STRUCTURAL_TYPES, ...nodeTypes])].sort();
  (node['properties'] as Record<string, Json>)['type'] = {
    type: 'string',
    description: 'A node type of the plugin registry (docs/plugins/), or input / output / error / supernode.',
    enum: types,
  };
  (node['properties'] as Record<string, Json>)['config'] = {
    type: 'object',
    nullable: true,
    description:
      "The node type's config (docs/plugins/<type>.md), checked by the controller: an invalid one makes the policy Accepted False, reason Invalid, with the compiler's message.",
    'x-kubernetes-preserve-unknown-fields': true,
  };
  const credentialProperties = Object.fromEntries(
    Object.entries(credentialsSchema.properties).map(([plugin, c]) => {
      const fields = (c as unknown as { properties: Record<string, Json>; required: string[] }).properties;
      return [
        plugin,
        {
          type: 'object',
          required: (c as unknown as { required: string[] }).required,
          properties: Object.fromEntries(
            Object.keys(fields).map((f) => [
              f,
              {
                description:
                  'A literal value, or {secretKeyRef: {name, key}}: a key of a Secret in the consumer namespace.',
                'x-kubernetes-preserve-unknown-fields': true,
              },
            ]),
          ),
        },
      ];
    }),
  );
  const consumerSpec: Json = {
    type: 'object',
    properties: {
      description: { type: 'string', maxLength: 4096 },
      group: { type: 'string', minLength: 1 },
      labels: toOpenApi(labelsSchema),
      credentials: { type: 'object', properties: credentialProperties },
    },
  };
  const ruleProps = globalRuleSchema.properties;
  const ruleSpec: Json = {
    type: 'object',
    required: ['policy'],
    properties: {
      policy: { type: 'string', minLength: 1, description: 'A SwitchyardPolicy of this namespace.' },
      params: toOpenApi(ruleProps.params),
      phase: toOpenApi(ruleProps.phase),
    },
  };
  const defs: [string, string, string, Json][] = [
    [
      'SwitchyardPolicy',
      'switchyardpolicies',
      'A policy graph (a supernode definition: one input boundary, the output boundary leads on to the backends) attached to HTTPRoute rules by an ExtensionRef filter (docs/kubernetes.md#policy-graphs-switchyarddevv1alpha1).',
      policySpec,
    ],
    [
      'SwitchyardConsumer',
      'switchyardconsumers',
      'A consumer (docs/consumers.md) with credentials, secret values taken from Secrets of its namespace.',
      consumerSpec,
    ],
    [
      'SwitchyardGlobalRule',
      'switchyardglobalrules',
      'Runs a SwitchyardPolicy of its namespace on every route served (docs/global-rules.md), in namespace/name order.',
      ruleSpec,
    ],
  ];
  return defs.map(([kind, plural, description, spec]) => ({
    file: `${SWITCHYARD_GROUP}_${plural}.yaml`,
    text:
      '# Generated by scripts/build-crds.mjs from the gateway.yaml schemas: do not edit.\n' +
      stringify(crd(kind, plural, description, spec), { lineWidth: 0 }),
  }));
}
