import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyGatewayConfig, type GatewayConfig } from '../../src/config/gateway.js';
import {
  pluginConfigReferences,
  policyReferences,
  storeReferences,
  supernodeReferences,
} from '../../src/admin/references.js';

const config: GatewayConfig = {
  ...emptyGatewayConfig(),
  routes: [
    { name: 'r1', match: {}, policy: 'p' },
    { name: 'r2', match: {}, policy: 'q' },
    { name: 'r3', match: {}, policy: 'p' },
  ],
  plugin_configs: [
    { name: 'shared-session', type: 'openid-connect', config: { session: { store: 'main' } } },
    { name: 'unrelated', type: 'mocking', config: { store: 'other' } },
  ],
  policies: [
    {
      name: 'p',
      nodes: [
        { id: 'limit', type: 'limit-count', config: { policy: 'redis', store: 'main' } },
        { id: 'auth', type: 'cas-auth', config_ref: 'shared-session', config: { session_store: 'main' } },
        { id: 'sec', type: 'supernode', config: { name: 'guard' } },
      ],
      edges: [],
    },
  ],
  supernodes: [
    {
      name: 'guard',
      nodes: [{ id: 'get', type: 'store-get', config: { store: 'main' }, config_ref: 'shared-session' }],
      edges: [],
    },
  ],
};

test('admin references: routes naming a policy', () => {
  assert.deepEqual(
    policyReferences(config, 'p').map((r) => `${r.label} @ ${r.path}`),
    ["route 'r1' @ routes[0].policy", "route 'r3' @ routes[2].policy"],
  );
  assert.deepEqual(policyReferences(config, 'none'), []);
});

test('admin references: supernode instances and config_ref users in policies and supernodes', () => {
  assert.deepEqual(
    supernodeReferences(config, 'guard').map((r) => r.label),
    ["policy 'p' node 'sec'"],
  );
  assert.deepEqual(
    pluginConfigReferences(config, 'shared-session').map((r) => `${r.label} @ ${r.path}`),
    [
      "policy 'p' node 'auth' @ policies[0].nodes[1].config_ref",
      "supernode 'guard' node 'get' @ supernodes[0].nodes[0].config_ref",
    ],
  );
});

test('admin references: a store is named by store, session.store, session_store and ACME storage', () => {
  const acme = { storage: { type: 'store', store: 'main', encryption_key: 'k' } };
  assert.deepEqual(
    storeReferences(config, 'main', acme).map((r) => `${r.label} @ ${r.path}`),
    [
      "plugin_config 'shared-session' @ plugin_configs[0].config.session.store",
      "policy 'p' node 'limit' @ policies[0].nodes[0].config.store",
      "policy 'p' node 'auth' @ policies[0].nodes[1].config.session_store",
      "supernode 'guard' node 'get' @ supernodes[0].nodes[0].config.store",
      'acme storage (system.yaml) @ acme.storage.store',
    ],
  );
  assert.deepEqual(
    storeReferences(config, 'other', undefined).map((r) => r.label),
    ["plugin_config 'unrelated'"],
  );
  assert.deepEqual(storeReferences(config, 'unused', acme), []);
});
