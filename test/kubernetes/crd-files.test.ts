// Issue 32 item 3: the switchyard.dev CRDs committed in deploy/helm/switchyard/crds/ are the ones
// scripts/build-crds.mjs derives from the gateway.yaml schemas, are structural (what the API server
// requires of a CRD schema), and accept the resources the docs and tests use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { Ajv } from 'ajv';
import { crdFiles } from '../../src/kubernetes/crd-schema.js';
import { registry } from '../../src/plugins/index.js';

const DIR = fileURLToPath(new URL('../../deploy/helm/switchyard/crds/', import.meta.url));
type Json = Record<string, unknown>;

test('issue 32 item 3: the committed CRD files are what scripts/build-crds.mjs generates from the schemas', () => {
  const generated = crdFiles([...registry.keys()]);
  assert.deepEqual(readdirSync(DIR).sort(), generated.map((g) => g.file).sort());
  // Compared as YAML data: the script formats the files with prettier after writing them.
  for (const { file, text } of generated)
    assert.deepEqual(
      parse(readFileSync(join(DIR, file), 'utf8')),
      parse(text),
      `${file} is stale: run SWITCHYARD_FROM_SOURCE=1 node_modules/.bin/node --import tsx scripts/build-crds.mjs`,
    );
});

/** Structural schema rules: a type (or preserve-unknown-fields) everywhere, no JSON-Schema-only keywords. */
function structural(schema: Json, path: string, problems: string[]): void {
  if (schema['type'] === undefined && schema['x-kubernetes-preserve-unknown-fields'] !== true)
    problems.push(`${path}: no type`);
  for (const k of ['propertyNames', 'oneOf', 'anyOf', 'allOf', '$ref', 'default'])
    if (schema[k] !== undefined) problems.push(`${path}: ${k}`);
  if (schema['additionalProperties'] === false) problems.push(`${path}: additionalProperties false`);
  for (const [k, v] of Object.entries((schema['properties'] as Record<string, Json> | undefined) ?? {}))
    structural(v, `${path}.${k}`, problems);
  if (typeof schema['additionalProperties'] === 'object')
    structural(schema['additionalProperties'] as Json, `${path}.*`, problems);
  if (schema['items'] !== undefined) structural(schema['items'] as Json, `${path}[]`, problems);
}

const PLURALS: Record<string, string> = {
  SwitchyardPolicy: 'switchyardpolicies',
  SwitchyardConsumer: 'switchyardconsumers',
  SwitchyardGlobalRule: 'switchyardglobalrules',
};

function openApi(kind: string): Json {
  const file = `switchyard.dev_${PLURALS[kind] ?? ''}.yaml`;
  const crd = parse(readFileSync(join(DIR, file), 'utf8')) as {
    spec: { names: { kind: string }; versions: { schema: { openAPIV3Schema: Json } }[] };
  };
  assert.equal(crd.spec.names.kind, kind);
  return (crd.spec.versions[0] as { schema: { openAPIV3Schema: Json } }).schema.openAPIV3Schema;
}

/** The OpenAPI schema as JSON Schema for Ajv (nullable → a null type; the x- keys dropped). */
function asJsonSchema(schema: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k.startsWith('x-kubernetes') || k === 'nullable' || k === 'format') continue;
    if (k === 'properties')
      out[k] = Object.fromEntries(
        Object.entries(v as Record<string, Json>).map(([p, s]) => [p, asJsonSchema(s)]),
      );
    else if (k === 'items' || (k === 'additionalProperties' && typeof v === 'object'))
      out[k] = asJsonSchema(v as Json);
    else out[k] = v;
  }
  if (schema['nullable'] === true && typeof out['type'] === 'string') out['type'] = [out['type'], 'null'];
  // Structural schemas prune unknown fields; here they must be refused, so that a typo is seen.
  if (
    out['type'] === 'object' &&
    out['properties'] !== undefined &&
    schema['x-kubernetes-preserve-unknown-fields'] !== true
  )
    out['additionalProperties'] ??= false;
  return out;
}

test('issue 32 item 3: the CRD schemas are structural, the node types come from the registry, and they accept the documented resources', () => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const kind of ['SwitchyardPolicy', 'SwitchyardConsumer', 'SwitchyardGlobalRule']) {
    const problems: string[] = [];
    structural(openApi(kind), kind, problems);
    assert.deepEqual(problems, [], kind);
  }
  const policy = openApi('SwitchyardPolicy');
  const typeEnum = (
    (((policy['properties'] as Record<string, Json>)['spec'] as Json)['properties'] as Record<string, Json>)[
      'nodes'
    ] as {
      items: { properties: { type: { enum: string[] } } };
    }
  ).items.properties.type.enum;
  for (const t of ['key-auth', 'upstream', 'cors', 'input', 'output', 'supernode', 'client'])
    assert.ok(typeEnum.includes(t), t);
  const validPolicy = ajv.compile(asJsonSchema(policy));
  const good = {
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'SwitchyardPolicy',
    metadata: { name: 'require-key' },
    spec: {
      params: { tag: { type: 'string', default: 'none' } },
      nodes: [
        { id: 'input', type: 'input' },
        { id: 'key', type: 'key-auth', config: { use_consumers: true } },
        { id: 'deny', type: 'client' },
        { id: 'output', type: 'output' },
      ],
      edges: [{ from: 'input.out', to: 'key.in' }],
    },
  };
  assert.equal(validPolicy(good), true, JSON.stringify(validPolicy.errors));
  assert.equal(
    validPolicy({ ...good, spec: { nodes: [{ id: 'x', type: 'no-such-node' }] } }),
    false,
    'an unknown node type is refused by the API server',
  );
  assert.equal(validPolicy({ ...good, spec: { nodes: [{ type: 'input' }] } }), false, 'a node without id');
  const validConsumer = ajv.compile(asJsonSchema(openApi('SwitchyardConsumer')));
  assert.equal(
    validConsumer({
      metadata: { name: 'alice' },
      spec: {
        labels: { tier: 'gold' },
        credentials: {
          'key-auth': { key: { secretKeyRef: { name: 'alice-key', key: 'key' } } },
          'basic-auth': {
            username: 'alice',
            password: { secretKeyRef: { name: 'alice-key', key: 'password' } },
          },
        },
      },
    }),
    true,
    JSON.stringify(validConsumer.errors),
  );
  assert.equal(
    validConsumer({ metadata: { name: 'a' }, spec: { credentials: { 'key-auth': {} } } }),
    false,
    'key-auth needs key',
  );
  const validRule = ajv.compile(asJsonSchema(openApi('SwitchyardGlobalRule')));
  assert.equal(validRule({ metadata: { name: 'r' }, spec: { policy: 'stamp', phase: 'response' } }), true);
  assert.equal(validRule({ metadata: { name: 'r' }, spec: { policy: 'stamp', phase: 'later' } }), false);
});
