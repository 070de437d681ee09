/** `switchyard validate --json`: one machine-readable report on stdout, the same exit codes as the text form. */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnGateway } from '../support/gateway-process.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir();
after(() => dir.remove());

interface Report {
  valid: boolean;
  errors: { file: string; line?: number; column?: number; path: string; message: string }[];
  warnings: string[];
}

/** Runs the CLI to its exit; stdout alone (the JSON) and everything for failure messages. */
async function validateJson(args: string[]): Promise<{ code: number | null; stdout: string; all: string }> {
  const gw = spawnGateway(['validate', '--json', ...args]);
  let stdout = '';
  gw.child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const timer = setTimeout(() => void gw.stop('SIGKILL'), 120_000);
  const code = await gw.exited;
  clearTimeout(timer);
  return { code, stdout, all: gw.output() };
}

const gatewayYaml = (type: string, loggerExtra = '') => `routes:
  - { name: r, match: { path: /x }, policy: p }
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: log, type: http-logger, config: { uri: 'https://logs.example.com/in'${loggerExtra} } }
      - { id: m, type: ${type}, config: { response_example: hi } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: log.in }
      - { from: log.success, to: m.in }
      - { from: m.success, to: client.in }
`;

const systemYaml = (level: string) => `listener:
  port: 18080
logging:
  level: ${level}
`;

test('validate --json: a valid configuration prints {valid: true} with its load warnings and exits 0', async () => {
  const gateway = join(dir.path, 'ok-gateway.yaml');
  const system = join(dir.path, 'ok-system.yaml');
  writeFileSync(gateway, gatewayYaml('mocking', ', ssl_verify: false'));
  writeFileSync(system, systemYaml('info'));
  const run = await validateJson(['--system-config', system, '--gateway-config', gateway]);
  assert.equal(run.code, 0, run.all);
  const report = JSON.parse(run.stdout) as Report;
  assert.equal(report.valid, true);
  assert.deepEqual(report.errors, []);
  assert.equal(report.warnings.length, 1, run.stdout);
  assert.match(report.warnings[0]!, /node 'log': ssl_verify: false/);
  assert.doesNotMatch(run.stdout, /configuration is valid|^warning:/m, 'nothing but the JSON on stdout');
});

test('validate --json: each error names file, line, column, key path and message; exit code 1', async () => {
  const gateway = join(dir.path, 'bad-gateway.yaml');
  const system = join(dir.path, 'bad-system.yaml');
  writeFileSync(gateway, gatewayYaml('mockng'));
  writeFileSync(system, systemYaml('verbose'));
  const run = await validateJson(['--system-config', system, '--gateway-config', gateway]);
  assert.equal(run.code, 1, run.all);
  const report = JSON.parse(run.stdout) as Report;
  assert.equal(report.valid, false);
  assert.equal(report.errors.length, 2, run.stdout);
  const level = report.errors.find((e) => e.file === system);
  assert.deepEqual(
    { line: level?.line, column: level?.column, path: level?.path },
    { line: 4, column: 3, path: 'logging.level' },
  );
  assert.match(level!.message, /'verbose' is not a log level/);
  const type = report.errors.find((e) => e.file === gateway);
  assert.deepEqual(
    { line: type?.line, column: type?.column, path: type?.path },
    { line: 8, column: 18, path: 'policies[0].nodes[2].type' },
  );
  assert.match(type!.message, /Unknown plugin type: mockng \(did you mean 'mocking'\?\)/);
});

test('validate --json: an unreadable file is an error entry, not a stack trace', async () => {
  const missing = join(dir.path, 'missing.yaml');
  const run = await validateJson(['--gateway-config', missing]);
  assert.equal(run.code, 1, run.all);
  const report = JSON.parse(run.stdout) as Report;
  assert.equal(report.valid, false);
  assert.ok(
    report.errors.some((e) => e.file === missing && /cannot read/.test(e.message)),
    run.stdout,
  );
});

test('--json belongs to validate only', async () => {
  const gw = spawnGateway(['migrate', '--gateway-config', join(dir.path, 'x.yaml'), '--json']);
  const code = await gw.exited;
  assert.notEqual(code, 0);
  assert.match(gw.output(), /--json is an option of validate only/);
});
