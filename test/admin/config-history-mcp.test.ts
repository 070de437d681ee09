/**
 * The MCP history tools (issue 34 item 2, docs/mcp.md#history-and-rollback): a put_* through
 * MCP is a version with source mcp and the token's name; rollback_config makes a version with
 * the target's sha256 and serves its content again; a read token may list but not roll back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mockPolicy } from './harness.js';
import { fails, ok, READ_TOKEN, startMcp, WRITE_TOKEN } from '../mcp/harness.js';

interface Version {
  version: number;
  user: string | null;
  source: string;
  sha256: string;
}

test('mcp: a write is a version (source mcp, user = token name); rollback_config restores version 1', async () => {
  const h = await startMcp({ onDisk: true });
  try {
    const writer = await h.connect(WRITE_TOKEN);
    const reader = await h.connect(READ_TOKEN);
    const { name: _n, ...policy } = mockPolicy('orders-policy', 'orders!');
    await ok(writer, 'put_policy', { name: 'orders-policy', definition: policy });
    await ok(writer, 'put_route', {
      name: 'orders',
      definition: { match: { path: '/orders' }, policy: 'orders-policy' },
    });
    assert.equal(await (await fetch(`${h.data}/orders`)).text(), 'orders!');

    const { versions } = await ok<{ versions: Version[] }>(reader, 'list_config_history');
    assert.deepEqual(
      versions.map((v) => [v.version, v.source, v.user]),
      [
        [3, 'mcp', 'writer'],
        [2, 'mcp', 'writer'],
        [1, 'startup', null],
      ],
    );
    const one = await ok<{ version: number; config: { policies?: unknown[] } }>(
      reader,
      'get_config_version',
      {
        version: 1,
      },
    );
    assert.equal(one.version, 1);
    assert.equal((one.config.policies ?? []).length, 1);

    const refused = await fails(reader, 'rollback_config', { version: 1 });
    assert.equal(refused.code, 'forbidden');

    const rolled = await ok<Version & { rolled_back_to: number }>(writer, 'rollback_config', { version: 1 });
    assert.equal(rolled.version, 4);
    assert.equal(rolled.source, 'rollback');
    assert.equal(rolled.sha256, versions[2]?.sha256);
    assert.equal((await fetch(`${h.data}/orders`)).status, 404);
    const missing = await fails(writer, 'rollback_config', { version: 99 });
    assert.equal(missing.code, 'not_found');
  } finally {
    await h.stop();
  }
});
