import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configJsonBytes, draftOf } from '../../src/admin/config-draft.js';
import { checkGatewayShape, type GatewayConfig } from '../../src/config/gateway.js';
import { scaleConfig } from '../../bench/config-scale-config.js';

const exact = (config: GatewayConfig) => Buffer.byteLength(JSON.stringify(config));

test('configJsonBytes is the byte length of the configuration JSON, before and after edits', async () => {
  const config = checkGatewayShape(scaleConfig(60, { upstreamPort: 9 }));
  // Characters of two to four bytes, and an item that is not an object.
  config.routes[0]!.name = 'café–雪🚦';
  (config.consumers as unknown[]).push('odd');
  assert.equal(await configJsonBytes(config), exact(config));
  const draft = draftOf(config);
  draft.routes.splice(3, 2);
  draft.policies.push({ ...draft.policies[0]!, name: 'p-new' });
  draft.routes[0] = { ...draft.routes[0]!, name: 'renamed' };
  assert.equal(await configJsonBytes(draft), exact(draft));
  assert.equal(await configJsonBytes(config), exact(config), 'the measured items were cached, not changed');
  assert.equal(await configJsonBytes(checkGatewayShape({})), exact(checkGatewayShape({})));
});

test('an edit of a draft leaves the running configuration as it was', () => {
  const config = checkGatewayShape(scaleConfig(10, { upstreamPort: 9 }));
  const before = JSON.stringify(config);
  const draft = draftOf(config);
  draft.routes.pop();
  draft.policies.reverse();
  draft.consumers.push({ name: 'c', credentials: {} });
  draft.stores = [];
  assert.equal(JSON.stringify(config), before);
  assert.equal(draft.routes.length, 9);
  // Items are shared, not copied: a draft costs one array per section.
  assert.equal(draft.routes[0], config.routes[0]);
});
