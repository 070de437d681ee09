import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSystemConfig } from '../../src/config/system.js';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

interface Cli {
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  kill(): Promise<number | null>;
}

/** The CLI as users run it, with stdout and stderr kept apart. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  // 'close', not 'exit': the exit can come before the last stderr/stdout bytes are read. A process
  // that left a child holding the pipes (a killed cluster primary) still counts as exited 2 s later.
  const exited = new Promise<number | null>((resolve) => {
    child.once('close', (code: number | null) => resolve(code));
    child.once('exit', (code: number | null) => setTimeout(() => resolve(code), 2000).unref());
  });
  return {
    stdout: () => out,
    stderr: () => err,
    exited,
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs to completion, bounded: a CLI that hangs fails the test instead of the file. */
async function finished(c: Cli, timeoutMs = 150000): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`CLI did not exit in ${timeoutMs} ms: ${c.stderr()}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([c.exited, timeout]);
  } finally {
    clearTimeout(timer);
    await c.kill();
  }
}

const GOOD_GATEWAY = `routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: ok, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

function files(system: string, gateway = GOOD_GATEWAY) {
  const dir = tempDir('switchyard-cli-');
  const sys = join(dir.path, 'system.yaml');
  const gw = join(dir.path, 'gateway.yaml');
  writeFileSync(sys, system);
  writeFileSync(gw, gateway);
  return { dir, sys, gw, args: ['--system-config', sys, '--gateway-config', gw] };
}

const system = (port: number, extra = '') =>
  `listener: { bind: 127.0.0.1, port: ${port} }\ntimeouts: { shutdown_timeout_seconds: 5 }\n${extra}`;

/** No JSON object and no stack frame on stderr: what an operator reads is prose. */
function assertReadable(stderr: string): void {
  assert.doesNotMatch(stderr, /^\s+at /m, `stack trace on stderr:\n${stderr}`);
  assert.doesNotMatch(stderr, /^\{/m, `JSON on stderr:\n${stderr}`);
}

// Every case spawns its own CLI on its own files and ports: a few run side by side to bound the file's time.
describe('cli: errors people can act on', { concurrency: 3 }, () => {
  test('cli: --version and -v print the package version and exit 0', async () => {
    const runs = ['--version', '-v'].map((flag) => cli([flag]));
    for (const c of runs) {
      assert.equal(await finished(c), 0);
      assert.equal(c.stdout(), `switchyard ${VERSION}\n`);
    }
  });

  test('cli: a YAML syntax error is reported as file:line:column and exits 1 (validate and start)', async () => {
    const f = files(system(await freePort()), 'routes:\n  - name: r\n    match: { path: /x\n    policy: p\n');
    try {
      for (const c of [cli(['validate', ...f.args]), cli(f.args)]) {
        assert.equal(await finished(c), 1);
        assert.match(
          c.stderr(),
          new RegExp(`${f.gw.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: invalid YAML: `),
        );
        assertReadable(c.stderr());
      }
    } finally {
      f.dir.remove();
    }
  });

  test('cli: validate points unknown node types, keys and policies at their line with a suggestion', async () => {
    const gateway = `routes:
  - { name: r, match: { path: /x }, policy: pp }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mockng, config: { response_example: ok } }
      - { id: k, type: key-auth, config: { hide_credentials: true, kye: x } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: k.in }
      - { from: k.success, to: m.in }
      - { from: k.denied, to: out.in }
      - { from: m.success, to: out.in }
`;
    const f = files(system(await freePort()), gateway);
    try {
      const c = cli(['validate', ...f.args]);
      assert.equal(await finished(c), 1);
      const err = c.stderr();
      assert.match(err, /gateway\.yaml:7:\d+: .*Unknown plugin type: mockng \(did you mean 'mocking'\?\)/);
      assert.match(
        err,
        /gateway\.yaml:8:\d+: .*policies\[0\]\.nodes\[2\]\.config\.kye: .*unknown key \(did you mean 'keys'\?\)/,
      );
      assert.match(err, /gateway\.yaml:2:\d+: .*unknown policy 'pp' \(did you mean 'p'\?\)/);
      assertReadable(err);
    } finally {
      f.dir.remove();
    }
  });

  test('cli: validate rejects a misspelt logging.level and logging.format', async () => {
    const f = files(system(await freePort(), 'logging: { level: ${LOG_LEVEL}, format: ${LOG_FORMAT} }\n'));
    try {
      const c = cli(['validate', ...f.args], { LOG_LEVEL: 'verbose', LOG_FORMAT: 'jsn' });
      assert.equal(await finished(c), 1);
      assert.match(c.stderr(), /system\.yaml:3:\d+: logging\.level: 'verbose' is not a log level/);
      assert.match(
        c.stderr(),
        /system\.yaml:3:\d+: logging\.format: 'jsn' is not a log format; use json or text \(did you mean 'json'\?\)/,
      );
      assert.match(c.stderr(), /2 error\(s\)/);
      // Filters and the reference's format names stay accepted (checked without another process).
      assert.doesNotThrow(() =>
        parseSystemConfig(readFileSync(f.sys, 'utf8'), {
          LOG_LEVEL: 'gateway=debug,warn',
          LOG_FORMAT: 'pretty',
        }),
      );
    } finally {
      f.dir.remove();
    }
  });

  test('cli: a port already in use is one line naming listener.port, exit 1', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const port = (blocker.address() as { port: number }).port;
    const f = files(system(port));
    try {
      const c = cli(f.args);
      assert.equal(await finished(c), 1);
      const lines = c.stderr().trim().split('\n');
      assert.equal(lines.length, 1, c.stderr());
      assert.match(lines[0] ?? '', new RegExp(`^error: listener\\.port ${port} is already in use`));
      assertReadable(c.stderr());
    } finally {
      blocker.close();
      f.dir.remove();
    }
  });

  test('cli: an admin port in use names admin.port', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const adminPort = (blocker.address() as { port: number }).port;
    const f = files(
      system(await freePort(), `admin: { bind: 127.0.0.1, port: ${adminPort}, username: a, password: b }\n`),
    );
    try {
      const c = cli(f.args);
      assert.equal(await finished(c), 1);
      assert.match(c.stderr(), new RegExp(`^error: admin\\.port ${adminPort} is already in use`, 'm'));
      assertReadable(c.stderr());
    } finally {
      blocker.close();
      f.dir.remove();
    }
  });

  test('cli: a missing certificate fails validate with its key and stops start with one line, exit 1', async () => {
    const f = files(
      system(await freePort(), 'tls: { cert_path: missing-cert.pem, key_path: missing-key.pem }\n'),
    );
    try {
      const v = cli(['validate', ...f.args]);
      const c = cli(f.args);
      assert.equal(await finished(v), 1);
      assert.match(
        v.stderr(),
        /system\.yaml:3:\d+: tls\.cert_path: cannot read 'missing-cert\.pem': no such file/,
      );
      assert.match(v.stderr(), /tls\.key_path: cannot read 'missing-key\.pem': no such file/);
      assert.equal(await finished(c), 1);
      const lines = c.stderr().trim().split('\n');
      assert.equal(lines.length, 1, c.stderr());
      assert.match(lines[0] ?? '', /^error: tls\.cert_path: cannot read 'missing-cert\.pem': no such file$/);
    } finally {
      f.dir.remove();
    }
  });

  test('cli: a gateway file that does not exist is "cannot read", not "invalid"', async () => {
    const f = files(system(await freePort()));
    try {
      const c = cli(['--system-config', f.sys, '--gateway-config', join(f.dir.path, 'nope.yaml')]);
      assert.equal(await finished(c), 1);
      assert.match(c.stderr(), /^error: cannot read .*nope\.yaml: ENOENT/m);
      assert.doesNotMatch(c.stderr(), /invalid gateway config/);
    } finally {
      f.dir.remove();
    }
  });

  test('cli: fixing a rejected gateway file back is logged, so the operator knows it is in sync', async () => {
    const port = await freePort();
    const f = files(system(port));
    const c = cli(f.args);
    try {
      await waitFor(() => c.stdout().includes('listening'), { timeoutMs: 90000, what: 'gateway listening' });
      writeFileSync(f.gw, GOOD_GATEWAY.replace('type: mocking', 'type: mockng'));
      await waitFor(() => c.stdout().includes('configuration rejected'), {
        timeoutMs: 40000,
        what: 'rejection',
      });
      assert.doesNotMatch(c.stdout(), /configuration file fixed/);
      writeFileSync(f.gw, GOOD_GATEWAY);
      await waitFor(() => c.stdout().includes('configuration file fixed'), {
        timeoutMs: 40000,
        what: 'the fixed-file log line',
      });
      assert.match(
        c.stdout(),
        /"level":30,.*configuration file fixed: it matches the running configuration again/,
      );
      assert.equal(await c.kill(), 0);
    } finally {
      await c.kill();
      f.dir.remove();
    }
  });
});
