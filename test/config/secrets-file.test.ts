import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { bindSecrets, createSecretStore, type SecretStore } from '../../src/config/secrets/index.js';
import { loadSecrets } from '../../src/config/secrets/load.js';
import { maskSecrets } from '../../src/admin/mcp/secrets.js';
import { compileWith } from '../../src/plugins/compile-with.js';
import { interpolateEnv } from '../../src/config/interpolate.js';
import { silentLogger } from '../../src/core/logger.js';
import { startAdmin, basic } from '../admin/harness.js';
import { spawnGateway } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { pino } from 'pino';

const dir = tempDir('switchyard-secrets-file-');
after(() => dir.remove());

/** A policy that answers "ok" behind key-auth with `keys`, and one that needs no secret. */
const gatewayYaml = (keys: string[]) => `
routes:
  - { name: api, match: { path: /api }, policy: api }
  - { name: open, match: { path: /open }, policy: open }
policies:
  - name: api
    nodes:
      - { id: in, type: listener }
      - id: auth
        type: key-auth
        config:
          keys: [${keys.map((k) => `'${k}'`).join(', ')}]
      - { id: m, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
      - { from: auth.denied, to: out.in }
      - { from: m.success, to: out.in }
  - name: open
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: open, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

/** A store of the file manager bound to a fresh environment object. */
function fileStore(refresh = 300, logger = silentLogger): { env: NodeJS.ProcessEnv; store: SecretStore } {
  const env: NodeJS.ProcessEnv = {};
  const system = parseSystemConfig(`secrets: { file: { refresh_s: ${refresh} } }\n`, env);
  const store = createSecretStore(system.secrets, logger, env)!;
  bindSecrets(env, store);
  return { env, store };
}

describe('secret references: the file manager', () => {
  test('a reference that never resolved fails the load naming its key path, and why', async () => {
    const { env, store } = fileStore();
    const missing = join(dir.path, 'missing.json');
    const config = parseGatewayConfig(gatewayYaml(['plain-key', `\${secret:file:${missing}#key}`]));
    await store.prepare(config);
    assert.throws(
      () => compileWith(config, silentLogger, env),
      (err: unknown) => {
        assert.ok(err instanceof ConfigRejected);
        const issue = err.issues.find((i) => i.path === 'policies[0].nodes[1].config.keys[1]');
        assert.ok(issue, JSON.stringify(err.issues));
        assert.match(issue.message, /cannot read .*missing\.json: ENOENT/);
        return true;
      },
    );
    store.close();
  });

  test('without a secrets block, a reference is a load error, never a literal key', () => {
    const config = parseGatewayConfig(gatewayYaml(['${secret:file:/etc/hostname}']));
    assert.throws(
      () => compileWith(config, silentLogger, {}),
      /policies\[0\]\.nodes\[1\]\.config\.keys\[0\][\s\S]*declares no secrets managers|declares no secrets managers/,
    );
  });

  test('#field picks a JSON key; none is the whole trimmed file; a non-JSON file names no content', async () => {
    const json = join(dir.path, 'api.json');
    const plain = join(dir.path, 'plain.txt');
    writeFileSync(json, JSON.stringify({ key: 'json-key-123456', other: 'x' }));
    writeFileSync(plain, '  whole-file-key-98765 \n');
    const { env, store } = fileStore();
    const config = parseGatewayConfig(
      gatewayYaml([
        `\${secret:file:${json}#key}`,
        `\${secret:file:${plain}}`,
        `\${secret:file:${plain}#key}`,
      ]),
    );
    await store.prepare(config);
    assert.equal(store.value(`\${secret:file:${json}#key}`), 'json-key-123456');
    assert.equal(store.value(`\${secret:file:${plain}}`), 'whole-file-key-98765');
    assert.throws(
      () => compileWith(config, silentLogger, env),
      (err: unknown) => {
        const text = JSON.stringify((err as ConfigRejected).issues);
        assert.match(text, /policies\[0\]\.nodes\[1\]\.config\.keys\[2\]/);
        assert.match(text, /is not a JSON object/);
        assert.doesNotMatch(text, /whole-file-key/);
        return true;
      },
    );
    store.close();
  });

  test('system.yaml references resolve on the parsed leaves; an unresolved one names its key', async () => {
    const pw = join(dir.path, 'admin-pw');
    writeFileSync(pw, 'pa: ss #word-1234');
    const system = parseSystemConfig(
      `admin: { bind: 127.0.0.1, port: 0, username: ops, password: '\${secret:file:${pw}}' }\nsecrets: { file: {} }\n`,
      {},
    );
    const env: NodeJS.ProcessEnv = {};
    const loaded = await loadSecrets(system, silentLogger, undefined, env);
    assert.deepEqual(loaded.issues, []);
    // A value with YAML syntax in it arrives whole: it was never spliced into the YAML text.
    assert.equal(system.admin?.password, 'pa: ss #word-1234');
    loaded.store?.close();
    const broken = parseSystemConfig(
      `admin: { bind: 127.0.0.1, port: 0, username: ops, password: '\${secret:file:${pw}.nope}' }\nsecrets: { file: {} }\n`,
      {},
    );
    const failed = await loadSecrets(broken, silentLogger, undefined, {});
    assert.equal(failed.issues[0]?.path, 'admin.password');
    failed.store?.close();
  });

  test('a rotated file re-compiles only the policy that uses it: the new key works, the old one stops', async () => {
    const keyFile = join(dir.path, 'rotating.json');
    writeFileSync(keyFile, JSON.stringify({ key: 'first-key-111111' }));
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const { env, store } = fileStore(300, logger);
    const yaml = gatewayYaml([`\${secret:file:${keyFile}#key}`]);
    await store.prepare(yaml);
    const h = await startAdmin({
      gatewayYaml: yaml,
      env,
      admin: 'users: [{ username: viewer, password: Viewer-Pw-123456, role: viewer }]',
    });
    store.start(() => void h.gateway.apply((current) => current, 'secrets').catch(() => undefined));
    try {
      const call = (key: string) => fetch(`${h.data}/api`, { headers: { 'x-api-key': key } });
      assert.equal((await call('first-key-111111')).status, 200);
      // The reference text itself never authenticates.
      assert.equal((await call(`\${secret:file:${keyFile}#key}`)).status, 401);
      const openPolicy = h.gateway.runtime.policies.get('open');

      const next = join(dir.path, 'rotating.next');
      writeFileSync(next, JSON.stringify({ key: 'second-key-2222222' }));
      renameSync(next, keyFile);
      assert.deepEqual(await store.refresh('file'), [`\${secret:file:${keyFile}#key}`]);
      await waitFor(async () => (await call('second-key-2222222')).status === 200, {
        timeoutMs: 10000,
        what: 'the rotated key',
      });
      assert.equal((await call('first-key-111111')).status, 401);
      assert.equal(h.gateway.runtime.compiled, 1, 'only the policy using the secret compiled again');
      assert.equal(h.gateway.runtime.policies.get('open'), openPolicy);

      // A failing manager keeps the last value and logs one line for the round, without the value.
      renameSync(keyFile, `${keyFile}.gone`);
      assert.deepEqual(await store.refresh('file'), []);
      assert.equal((await call('second-key-2222222')).status, 200);
      const failing = lines.filter((l) => l.includes('cannot read; the last values are kept'));
      assert.equal(failing.length, 1);

      // Exports and viewer reads show the reference as written, never the value.
      const viewer = basic('viewer', 'Viewer-Pw-123456');
      const exported = await (
        await fetch(`${h.url}/api/config/export`, { headers: { authorization: viewer } })
      ).text();
      assert.ok(exported.includes(`\${secret:file:${keyFile}#key}`), exported);
      const adminExport = await (await h.call('GET', '/api/config/export')).text();
      assert.ok(adminExport.includes(`\${secret:file:${keyFile}#key}`));
      for (const text of [exported, adminExport, lines.join('')]) {
        assert.doesNotMatch(text, /first-key-111111|second-key-2222222/);
      }
    } finally {
      store.close();
      await h.stop();
    }
  });

  test('a consumer credential from a file rotates too, and an Admin write adding a reference reads it first', async () => {
    const keyFile = join(dir.path, 'consumer.json');
    writeFileSync(keyFile, JSON.stringify({ alice: 'alice-key-aaaaaa' }));
    const extra = join(dir.path, 'extra-key');
    writeFileSync(extra, 'added-key-bbbbbbb');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const { env, store } = fileStore(300, logger);
    const yaml = `
consumers:
  - name: alice
    credentials:
      key-auth: { key: '\${secret:file:${keyFile}#alice}' }
routes:
  - { name: api, match: { path: /api }, policy: api }
policies:
  - name: api
    nodes:
      - { id: in, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - { id: m, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: auth.in }
      - { from: auth.success, to: m.in }
      - { from: auth.denied, to: out.in }
      - { from: m.success, to: out.in }
`;
    await store.prepare(yaml);
    const h = await startAdmin({ gatewayYaml: yaml, env });
    store.start(
      () => void h.gateway.apply((current) => current, 'secrets').catch(() => undefined),
      () => h.gateway.runtime.config,
    );
    try {
      const call = (key: string) => fetch(`${h.data}/api`, { headers: { 'x-api-key': key } });
      assert.equal((await call('alice-key-aaaaaa')).status, 200);
      writeFileSync(keyFile, JSON.stringify({ alice: 'alice-key-rotated-cc' }));
      await store.refresh('file');
      await waitFor(async () => (await call('alice-key-rotated-cc')).status === 200, {
        timeoutMs: 10000,
        what: 'the rotated consumer key',
      });
      assert.equal((await call('alice-key-aaaaaa')).status, 401);
      // An Admin write that adds a reference: read before the compile, not refused as unknown.
      const res = await h.call('POST', '/api/consumers', {
        name: 'bob',
        credentials: { 'key-auth': { key: `\${secret:file:${extra}}` } },
      });
      assert.equal(res.status, 201, await res.text());
      assert.equal((await call('added-key-bbbbbbb')).status, 200);
      const bad = await h.call('POST', '/api/consumers', {
        name: 'carol',
        credentials: { 'key-auth': { key: `\${secret:file:${extra}.absent}` } },
      });
      assert.equal(bad.status, 400);
      assert.match(await bad.text(), /consumers\[2\]\.credentials\.key-auth\.key.*ENOENT|ENOENT/);
      // The refused write's reference is not read forever: the next round forgets it, silently.
      const before = lines.length;
      await store.refresh('file');
      assert.deepEqual(
        lines.slice(before).filter((l) => l.includes('cannot read')),
        [],
      );
      assert.equal((await call('added-key-bbbbbbb')).status, 200);
    } finally {
      store.close();
      await h.stop();
    }
  });

  test('interpolation: ${NAME} first, then ${secret:…}; a value is never read as placeholders', async () => {
    const file = join(dir.path, 'tricky');
    writeFileSync(file, 'val-${HOME}-$' + '{secret:file:/etc/passwd}');
    const { env, store } = fileStore();
    env['REGION'] = 'eu';
    const text = `\${REGION}:\${secret:file:${file}}`;
    await store.prepare(text);
    assert.equal(interpolateEnv(text, env), 'eu:val-${HOME}-$' + '{secret:file:/etc/passwd}');
    // Another environment object sees no store: the reference stays as written (and compiling refuses it).
    assert.equal(interpolateEnv(text, { REGION: 'eu' }), `eu:\${secret:file:${file}}`);
    store.close();
  });

  test('secrets.file.dirs: a path outside the listed folders (or a link leading out) is refused', async () => {
    const inside = join(dir.path, 'allowed');
    mkdirSync(inside, { recursive: true });
    writeFileSync(join(inside, 'ok'), 'inside-value-1');
    writeFileSync(join(dir.path, 'outside'), 'outside-value-1');
    symlinkSync(join(dir.path, 'outside'), join(inside, 'link-out'));
    const env: NodeJS.ProcessEnv = {};
    const system = parseSystemConfig(`secrets: { file: { dirs: ['${inside}'] } }\n`, env);
    const store = createSecretStore(system.secrets, silentLogger, env)!;
    const refs = [
      join(inside, 'ok'),
      join(dir.path, 'outside'),
      join(inside, 'link-out'),
      `${inside}/../outside`,
    ];
    await store.prepare(refs.map((p) => `\${secret:file:${p}}`).join(' '));
    assert.equal(store.value(`\${secret:file:${refs[0]}}`), 'inside-value-1');
    for (const p of refs.slice(1)) {
      const ref = `\${secret:file:${p}}`;
      assert.equal(store.value(ref), undefined, p);
      assert.match(
        store.problem({ text: ref, manager: 'file', path: p, field: undefined }) ?? '',
        /outside secrets\.file\.dirs/,
      );
    }
    store.close();
  });

  test('manager credentials are masked like secret values', () => {
    const masked = JSON.stringify(
      maskSecrets({
        vault: { token: 'hvs.TOKEN-1', approle: { role_id: 'r', secret_id: 'SECRET-ID-1' } },
        aws: { secret_access_key: 'AWS-SK-1', session_token: 'AWS-ST-1' },
      }),
    );
    assert.doesNotMatch(masked, /TOKEN-1|SECRET-ID-1|AWS-SK-1|AWS-ST-1/);
  });

  test('`switchyard validate` and `switchyard` refuse a reference that does not resolve, naming the key', async () => {
    const system = join(dir.path, 'system.yaml');
    const gateway = join(dir.path, 'gateway.yaml');
    writeFileSync(system, 'listener: { bind: 127.0.0.1, port: 0 }\nsecrets: { file: { refresh_s: 5 } }\n');
    writeFileSync(gateway, gatewayYaml([`\${secret:file:${join(dir.path, 'absent.json')}#key}`]));
    const validate = spawnGateway(
      ['validate', '--system-config', system, '--gateway-config', gateway, '--json'],
      {
        SWITCHYARD_FROM_SOURCE: '1',
      },
    );
    assert.equal(await validate.exited, 1);
    const report = JSON.parse(validate.output().slice(validate.output().indexOf('{'))) as {
      errors: { path: string; message: string }[];
    };
    assert.ok(
      report.errors.some((e) => e.path === 'policies[0].nodes[1].config.keys[0]' && /ENOENT/.test(e.message)),
      validate.output(),
    );
    const run = spawnGateway(['--system-config', system, '--gateway-config', gateway], {
      SWITCHYARD_FROM_SOURCE: '1',
    });
    assert.equal(await run.exited, 1);
    assert.match(run.output(), /policies\[0\]\.nodes\[1\]\.config\.keys\[0\]/);
  });
});
