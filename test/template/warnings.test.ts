import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileTemplate, templateFor } from '../../src/template/index.js';
import { makeContext } from './fixtures.js';

const BAD = [
  '{{request.header.x}}',
  '{{request.headers.}}',
  '{{client.mac}}',
  '{{response.status.code}}',
  '{{message}}',
  '{{env.SWITCHYARD_SURELY_UNSET}}',
];

void test('template warnings: one per bad reference, at parse time only, never at render', () => {
  const warnings: string[] = [];
  const text = `a ${BAD.join(' b ')} {{request.method}} {{mustache}} $nope`;
  const template = compileTemplate(text, {
    legacy: true,
    where: { policy: 'orders', node: 'rw', key: 'headers.set.x-tenant' },
    warn: (message) => warnings.push(message),
    env: {},
  });
  assert.equal(warnings.length, BAD.length);
  BAD.forEach((reference, i) => {
    assert.ok(warnings[i]?.includes(reference), `warning ${i} names ${reference}: ${warnings[i]}`);
    assert.ok(warnings[i]?.includes('policy "orders", node "rw", key "headers.set.x-tenant"'));
  });
  const ctx = makeContext();
  for (let i = 0; i < 100; i++) template.render(ctx);
  assert.equal(warnings.length, BAD.length);
});

void test('template warnings: silent cases stay silent (unknown namespace, unclosed, absent, legacy unknown)', () => {
  const warnings: string[] = [];
  const template = compileTemplate(
    '{{body.x}} {{mustache}} {{ $1 }} $nope ${x.y} {{message.absent}} {{request.path',
    {
      legacy: true,
      warn: (message) => warnings.push(message),
    },
  );
  template.render(makeContext());
  assert.deepEqual(warnings, []);
});

void test('template warnings: no warn callback means no throw', () => {
  assert.equal(compileTemplate('{{client.mac}}').render(makeContext()), '{{client.mac}}');
});

void test('templateFor: builds PluginEnv.template with the node coordinates and the field key', () => {
  const warnings: string[] = [];
  const template = templateFor({ policy: 'p', node: 'n' }, (m) => warnings.push(m), { TENANT: 'acme' });
  const t1 = template('{{env.TENANT}}/{{client.nope}}', 'uri');
  const t2 = template('$status {{response.status}}', 'body', { legacy: true, phase: 'response' });
  const ctx = makeContext({ status: 503 });
  assert.equal(t1.render(ctx), 'acme/{{client.nope}}');
  assert.equal(t2.render(ctx), '503 503');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /policy "p", node "n", key "uri"/);
});
