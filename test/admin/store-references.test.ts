import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { storeReferences } from '../../src/admin/references.js';
import { checkGatewayShape } from '../../src/config/gateway.js';

test('admin stores: a store named only inside a workflow rule still counts as in use', () => {
  const config = checkGatewayShape(
    parse(`
stores:
  - { name: shared, type: redis, url: "redis://127.0.0.1:6379" }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - id: wf
        type: workflow
        config:
          rules:
            - actions: [[limit-count, { count: 1, time_window: 60, policy: redis, store: shared }]]
      - id: sess
        type: cas-auth
        config: { idp_uri: "https://cas.test", session: { secret: s, storage: kvstore, store: shared } }
      - { id: out, type: client }
`),
  );
  const refs = storeReferences(config, 'shared', undefined);
  assert.deepEqual(
    refs.map((r) => r.path),
    ['policies[0].nodes[1].config.rules[0].actions[0][1].store', 'policies[0].nodes[2].config.session.store'],
  );
  assert.deepEqual(storeReferences(config, 'other', undefined), []);
});
