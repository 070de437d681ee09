import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CREDENTIAL_TYPES, JWT_ALGORITHMS } from '../../ui/src/resources/credential-types.js';
import { credentialsSchema } from '../../src/config/consumers.js';
import { JWT_ALGORITHMS as GATEWAY_JWT_ALGORITHMS } from '../../src/signing/jwt-key.js';

interface Shape {
  required: readonly string[];
  properties: Record<string, { type?: string; enum?: readonly string[] }>;
}

test('F30: the consumer form covers every credential type and field the consumer schema allows', () => {
  const schema = credentialsSchema.properties as unknown as Record<string, Shape>;
  assert.deepEqual(CREDENTIAL_TYPES.map((t) => t.type).sort(), Object.keys(schema).sort());
  for (const { type, fields } of CREDENTIAL_TYPES) {
    const shape = schema[type] as Shape;
    assert.deepEqual(fields.map((f) => f.key).sort(), Object.keys(shape.properties).sort(), type);
    assert.deepEqual(
      fields
        .filter((f) => f.required)
        .map((f) => f.key)
        .sort(),
      [...shape.required].sort(),
      `${type}: required fields`,
    );
    for (const f of fields) {
      const prop = shape.properties[f.key];
      if (prop?.type === 'boolean') assert.equal(f.kind, 'boolean', `${type}.${f.key}`);
      if (prop?.enum !== undefined) assert.deepEqual(f.options, prop.enum, `${type}.${f.key}`);
    }
  }
  assert.deepEqual([...JWT_ALGORITHMS], [...GATEWAY_JWT_ALGORITHMS]);
});
