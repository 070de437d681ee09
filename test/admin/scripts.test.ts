import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { read, startAdmin } from './harness.js';

test('admin scripts: GET /api/scripts lists the Lua files of the plugins/ folder beside the config folder', async () => {
  const h = await startAdmin({ onDisk: true });
  try {
    // gateway.yaml lives in <tmp>/; its plugins folder is <tmp>/../plugins per COMPAT §5.
    const plugins = join(dirname(dirname(h.file ?? '')), 'plugins');
    const empty = await read(await h.call('GET', '/api/scripts'));
    assert.equal(empty.status, 200);
    mkdirSync(join(plugins, 'lib'), { recursive: true });
    writeFileSync(join(plugins, 'add-id.lua'), 'function execute(ctx) return ctx end');
    writeFileSync(join(plugins, 'lib', 'helpers.lua'), 'return {}');
    try {
      const listed = await read(await h.call('GET', '/api/scripts'));
      assert.equal(listed.status, 200);
      const scripts = (listed.body as { scripts: { name: string; file: string; runtime: string }[] }).scripts;
      const files = scripts.map((s) => s.file).sort();
      assert.ok(files.includes('add-id.lua'), JSON.stringify(scripts));
      assert.ok(files.includes(join('lib', 'helpers.lua')), JSON.stringify(scripts));
      assert.ok(scripts.every((s) => s.runtime === 'lua'));
    } finally {
      const { rmSync } = await import('node:fs');
      rmSync(plugins, { recursive: true, force: true });
    }
    const anonymous = await fetch(`${h.url}/api/scripts`);
    assert.equal(anonymous.status, 401);
  } finally {
    await h.stop();
  }
});
