import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { adminCall, cliConfig, startCli } from '../admin/cli-harness.js';
import { BASE_YAML, basic } from '../admin/harness.js';
import { waitForHttp } from '../support/gateway-process.js';

test('admin persist e2e: a change made through the API survives a restart of the real CLI', async () => {
  const config = await cliConfig(BASE_YAML);
  try {
    const first = await startCli(config);
    try {
      const res = await adminCall(config, 'POST', '/api/routes', {
        name: 'kept',
        match: { path: '/kept' },
        policy: 'hello-policy',
      });
      assert.equal(res.status, 201);
      assert.equal(await (await fetch(`${config.data}/kept`)).text(), 'hello');
    } finally {
      assert.equal(await first.stop(), 0);
    }
    const text = readFileSync(config.gatewayPath, 'utf8');
    assert.ok(text.includes('# seeded by the admin tests'), 'comments survive the write');
    const second = await startCli(config);
    try {
      const list = (await (await adminCall(config, 'GET', '/api/routes')).json()) as { name: string }[];
      assert.deepEqual(
        list.map((r) => r.name),
        ['hello', 'kept'],
      );
      assert.equal(await (await fetch(`${config.data}/kept`)).text(), 'hello');
    } finally {
      await second.stop();
    }
  } finally {
    config.remove();
  }
});

test('admin persist e2e: kill -9 in the middle of 100 acknowledged writes loses none of them', async () => {
  const config = await cliConfig(BASE_YAML);
  try {
    const victim = await startCli(config);
    const acknowledged: string[] = [];
    let next = 0;
    let killed = false;
    const worker = async () => {
      while (!killed && next < 100) {
        const name = `burst-${next++}`;
        try {
          const res = await adminCall(config, 'POST', '/api/routes', {
            name,
            match: { path: `/${name}` },
            policy: 'hello-policy',
          });
          await res.arrayBuffer();
          if (res.status === 201) acknowledged.push(name);
          else assert.fail(`${name}: unexpected ${res.status}`);
        } catch (err) {
          if (!killed) throw err;
        }
        if (acknowledged.length >= 50 && !killed) {
          killed = true;
          victim.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    await victim.exited;
    assert.ok(killed, 'the process was killed mid-burst');
    assert.ok(acknowledged.length >= 50 && acknowledged.length < 100, String(acknowledged.length));

    // The file is whole (old or new, never torn) and holds every acknowledged write.
    const stored = parseGatewayConfig(readFileSync(config.gatewayPath, 'utf8'));
    const names = new Set(stored.routes.map((r) => r.name));
    for (const name of acknowledged) assert.ok(names.has(name), `${name} was acknowledged but lost`);
    assert.deepEqual(
      readdirSync(config.dir).filter((f) => f.endsWith('.tmp')).length <= 1,
      true,
      'at most the one interrupted temp file remains',
    );

    const restarted = await startCli(config);
    try {
      const list = (await (await adminCall(config, 'GET', '/api/routes')).json()) as { name: string }[];
      const live = new Set(list.map((r) => r.name));
      for (const name of acknowledged) assert.ok(live.has(name), `${name} missing after restart`);
      const last = acknowledged[acknowledged.length - 1] as string;
      assert.equal(await (await fetch(`${config.data}/${last}`)).text(), 'hello');
    } finally {
      await restarted.stop();
    }
  } finally {
    config.remove();
  }
});

test('admin persist e2e: an empty admin password is generated and printed exactly once', async () => {
  const config = await cliConfig(BASE_YAML, 'password: ""');
  try {
    const p = await startCli(config);
    try {
      const match = /generated password for user 'admin': (\S+)/.exec(p.output());
      assert.ok(match !== null, p.output());
      const password = match[1] as string;
      const ok = await fetch(`${config.admin}/api/status`, {
        headers: { authorization: basic('admin', password) },
      });
      assert.equal(ok.status, 200);
      await waitForHttp(`${config.admin}/healthz`);
      assert.equal(p.output().split(password).length - 1, 1, 'printed once, never logged');
    } finally {
      await p.stop();
    }
    assert.equal(readFileSync(config.gatewayPath, 'utf8'), BASE_YAML);
  } finally {
    config.remove();
  }
});
