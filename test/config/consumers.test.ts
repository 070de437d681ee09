import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConsumerIndex, EMPTY_CONSUMER_INDEX } from '../../src/config/consumers.js';
import { checkGatewayShape, parseGatewayConfig, type ConsumerConfig } from '../../src/config/gateway.js';
import { ConfigRejected, type ConfigIssue } from '../../src/config/schema-validate.js';
import { compileGateway } from '../../src/engine/compile.js';
import { templateFactory } from '../../src/engine/templates.js';
import { silentLogger } from '../../src/core/logger.js';
import { registry } from '../../src/plugins/index.js';

const alice: ConsumerConfig = {
  name: 'alice',
  group: 'gold',
  labels: { custom_id: '42', tier: 'gold' },
  credentials: {
    'key-auth': { key: 'alice-key' },
    'basic-auth': { username: 'alice', password: 'pw' },
  },
};

function rejectedAt(raw: unknown, path: string): void {
  assert.throws(
    () => checkGatewayShape({ consumers: raw }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected);
      assert.ok(
        err.issues.some((i) => i.path === path),
        `no issue at ${path}: ${JSON.stringify(err.issues)}`,
      );
      return true;
    },
  );
}

test('consumers: the reference item shape is accepted and indexed by each credential field', () => {
  const config = checkGatewayShape({
    consumers: [alice, { name: 'bob', credentials: { 'key-auth': { key: 'bob-key' } } }],
  });
  const issues: ConfigIssue[] = [];
  const index = buildConsumerIndex(config.consumers, {}, issues);
  assert.deepEqual(issues, []);
  assert.equal(index.size, 2);
  assert.equal(index.byCredential('key-auth', 'key', 'alice-key')?.name, 'alice');
  assert.equal(index.byCredential('basic-auth', 'username', 'alice')?.group, 'gold');
  assert.equal(index.byCredential('key-auth', 'key', 'nope'), undefined);
  assert.equal(index.byCredential('jwt-auth', 'key', 'alice-key'), undefined);
  assert.equal(index.byName('bob')?.credentials['key-auth']?.['key'], 'bob-key');
  assert.deepEqual([...index.credentialMap('key-auth', 'key').keys()].sort(), ['alice-key', 'bob-key']);
  assert.equal(index.credentialMap('hmac-auth', 'access_key').size, 0);
  assert.deepEqual(index.byName('alice')?.labels, { custom_id: '42', tier: 'gold' });
  assert.ok(Object.isFrozen(index.byName('alice')));
});

test('consumers: ${ENV} placeholders in credentials are resolved when the index is built', () => {
  const config = checkGatewayShape({
    consumers: [
      { name: 'alice', group: '${TIER:-silver}', credentials: { 'key-auth': { key: '${ALICE_KEY}' } } },
    ],
  });
  const index = buildConsumerIndex(config.consumers, { ALICE_KEY: 'k-from-env' }, []);
  assert.equal(index.byCredential('key-auth', 'key', 'k-from-env')?.group, 'silver');
});

test('consumers: two consumers sharing an identifying credential are a config issue', () => {
  const issues: ConfigIssue[] = [];
  const index = buildConsumerIndex(
    [
      {
        name: 'a',
        credentials: { 'key-auth': { key: 'same' }, 'basic-auth': { username: 'a', password: 'x' } },
      },
      {
        name: 'b',
        credentials: { 'key-auth': { key: 'same' }, 'basic-auth': { username: 'b', password: 'x' } },
      },
    ],
    {},
    issues,
  );
  assert.deepEqual(issues, [
    {
      path: 'consumers[1].credentials.key-auth.key',
      message: "consumers 'a' and 'b' share the same key-auth key",
    },
  ]);
  assert.equal(index.byCredential('key-auth', 'key', 'same'), undefined, 'an ambiguous value names no one');
  assert.equal(index.byCredential('basic-auth', 'password', 'x'), undefined);
  assert.equal(index.byCredential('basic-auth', 'username', 'b')?.name, 'b');
});

test('consumers: an identifying credential that resolves to empty is a config issue', () => {
  const issues: ConfigIssue[] = [];
  buildConsumerIndex([{ name: 'a', credentials: { 'key-auth': { key: '${UNSET_KEY}' } } }], {}, issues);
  assert.equal(issues[0]?.path, 'consumers[0].credentials.key-auth.key');
});

test('consumers: the schema is strict — unknown keys, credential types and fields are rejected', () => {
  rejectedAt([{ name: 'a', tier: 'gold' }], 'consumers[0].tier');
  rejectedAt([{ name: 'a', credentials: { key_auth: { key: 'k' } } }], 'consumers[0].credentials.key_auth');
  rejectedAt(
    [{ name: 'a', credentials: { 'key-auth': { key: 'k', extra: 1 } } }],
    'consumers[0].credentials.key-auth.extra',
  );
  rejectedAt([{ name: 'a', credentials: { 'key-auth': {} } }], 'consumers[0].credentials.key-auth.key');
  rejectedAt(
    [{ name: 'a', credentials: { 'basic-auth': { username: 'a' } } }],
    'consumers[0].credentials.basic-auth.password',
  );
  rejectedAt(
    [{ name: 'a', credentials: { 'hmac-auth': { access_key: 'x' } } }],
    'consumers[0].credentials.hmac-auth.secret_key',
  );
  rejectedAt(
    [{ name: 'a', credentials: { 'jwt-auth': { key: 'k', algorithm: 'none' } } }],
    'consumers[0].credentials.jwt-auth.algorithm',
  );
  rejectedAt([{ name: 'a', labels: { 'bad label': 'x' } }], 'consumers[0].labels');
  rejectedAt([{ group: 'gold' }], 'consumers[0].name');
});

test('consumers: the compiler hands the index to nodes and reports duplicate names and credentials', () => {
  const yaml = `
consumers:
  - { name: alice, credentials: { key-auth: { key: k1 } } }
  - { name: alice, credentials: { key-auth: { key: k2 } } }
  - { name: carol, credentials: { key-auth: { key: k1 } } }
`;
  assert.throws(
    () =>
      compileGateway(parseGatewayConfig(yaml), {
        registry,
        logger: silentLogger,
        templateFactory: templateFactory({}),
      }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigRejected);
      const paths = err.issues.map((i) => i.path).sort();
      assert.deepEqual(paths, ['consumers[1].name', 'consumers[2].credentials.key-auth.key']);
      return true;
    },
  );
});

test('consumers: a configuration without consumers gets the empty index', () => {
  assert.equal(buildConsumerIndex([], {}, []), EMPTY_CONSUMER_INDEX);
  assert.equal(EMPTY_CONSUMER_INDEX.size, 0);
  assert.equal(EMPTY_CONSUMER_INDEX.credentialMap('key-auth', 'key').size, 0);
});
