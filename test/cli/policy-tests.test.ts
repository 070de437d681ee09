/**
 * Policy tests (issue 34 item 3, docs/config-as-code.md#policy-tests): `switchyard test` and
 * `switchyard validate` run as real processes; each test's request goes through the real data
 * plane, router and run loop of an in-process gateway, its `upstream` nodes answered by mocks.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/free-port.js';
import { tempDir } from '../support/temp-dir.js';

const BIN = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const dir = tempDir('policy-tests-');
const SYSTEM = join(dir.path, 'system.yaml');
/** A TCP server configured as the upstream target: it counts the connections it is offered. */
let target: Server;
let connections = 0;
let targetPort = 0;
/** A port nobody listens on, for the second upstream. */
let deadPort = 0;

const gatewayYaml = (authPorts: string, tests: string) => `
routes:
  - name: orders
    match: { path: /api/orders, host: shop.example }
    policy: shop
  - name: health
    match: { path: /health }
    policy: health
policies:
  - name: shop
    nodes:
      - { id: listener, type: listener }
      - { id: auth, type: key-auth, config: { use_consumers: true } }
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${targetPort} }] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: auth.in }
${authPorts}
      - { from: backend.success, to: client.in }
  - name: health
    nodes:
      - { id: listener, type: listener }
      - id: probe
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${deadPort} }] }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: probe.in }
      - { from: probe.success, to: client.in }
consumers:
  - name: alice
    credentials: { key-auth: { key: alice-key } }
${tests}`;

const RIGHT_WIRING = `      - { from: auth.success, to: backend.in }
      - { from: auth.denied, to: client.in }`;
/** The broken policy: a refused request goes to the backend anyway. */
const BROKEN_WIRING = `      - { from: auth.success, to: backend.in }
      - { from: auth.denied, to: backend.in }`;

const ISSUE_TESTS = `tests:
  - name: a request without a key is refused
    request: { method: GET, path: /api/orders, headers: { host: shop.example } }
    upstreams: { backend: { status: 200, body: "ok" } }
    expect: { status: 401, ports: [auth.denied], headers: { www-authenticate: null } }
  - name: alice reaches the backend
    request: { method: GET, path: /api/orders, headers: { host: shop.example, x-api-key: alice-key } }
    upstreams: { backend: { status: 201, headers: { x-served-by: mock }, body: "created" } }
    expect:
      status: 201
      ports: [auth.success, backend.success]
      headers: { x-served-by: mock, www-authenticate: null }
      body: created
      message: { consumer.name: alice }
  - name: an upstream on a port nobody listens on answers with the default echo
    request: { method: POST, path: /health, headers: { x-probe: "1" }, body: { ping: true } }
    expect:
      status: 200
      ports_exact: [probe.success]
      json: { method: POST, path: /health, headers: { x-probe: "1" }, body: '{"ping":true}' }
`;

function writeGateway(name: string, wiring: string, tests: string): string {
  const path = join(dir.path, name);
  writeFileSync(path, gatewayYaml(wiring, tests));
  return path;
}

before(async () => {
  writeFileSync(SYSTEM, 'logging: { level: warn }\n');
  target = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetPort = (target.address() as { port: number }).port;
  deadPort = await freePort();
});

after(async () => {
  await new Promise<void>((resolve) => target.close(() => resolve()));
  dir.remove();
});

test('the tests of gateway.yaml pass through the real engine with mocked upstreams, opening no socket to a target', async () => {
  const gateway = writeGateway('good.yaml', RIGHT_WIRING, ISSUE_TESTS);
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway]);
  assert.equal(run.stderr, '');
  assert.deepEqual(run.stdout.trimEnd().split('\n'), [
    'ok - a request without a key is refused',
    'ok - alice reaches the backend',
    'ok - an upstream on a port nobody listens on answers with the default echo',
    '3 passed, 0 failed',
  ]);
  assert.equal(run.code, 0);
  assert.equal(connections, 0, 'no connection reached the configured upstream target');
});

test('a broken policy fails the right test, naming the ports it took, and exits 1', async () => {
  const gateway = writeGateway('broken.yaml', BROKEN_WIRING, ISSUE_TESTS);
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway]);
  const lines = run.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 4, run.stdout);
  assert.equal(
    lines[0],
    'not ok - a request without a key is refused: status 200, expected 401; ports taken: auth.denied → backend.success',
  );
  assert.equal(lines[1], 'ok - alice reaches the backend');
  assert.equal(lines[2], 'ok - an upstream on a port nobody listens on answers with the default echo');
  assert.equal(lines[3], '2 passed, 1 failed');
  assert.equal(run.code, 1);
});

test('each kind of expectation reports what differed: ports (prefix and exact), headers, body, json, message', async () => {
  const gateway = writeGateway('good-no-tests.yaml', RIGHT_WIRING, '');
  const file = join(dir.path, 'wrong.tests.yaml');
  writeFileSync(
    file,
    `tests:
  - name: wrong everything
    request: { path: /api/orders, headers: { host: shop.example, x-api-key: alice-key } }
    upstreams: { backend: { status: 200, headers: { x-a: one }, body: '{"n":1,"list":[1,2]}' } }
    expect:
      ports: [backend.success]
      headers: { x-a: two, x-missing: here, x-powered: null }
      body_contains: nope
      json: { n: 2 }
      message: { consumer.name: bob }
  - name: exact ports are exact
    request: { path: /api/orders, headers: { host: shop.example, x-api-key: alice-key } }
    expect: { ports: [auth.success], ports_exact: true }
  - name: a prefix is enough
    request: { path: /api/orders, headers: { host: shop.example, x-api-key: alice-key } }
    expect: { ports: [auth.success], json: { headers: { host: shop.example } } }
  - name: no route
    request: { path: /nowhere }
    expect: { status: 404, ports_exact: [] }
`,
  );
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway, file]);
  const lines = run.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5, run.stdout);
  const first = lines[0] ?? '';
  assert.match(first, /^not ok - wrong everything: /);
  assert.match(first, /ports auth\.success → backend\.success, expected to start with backend\.success/);
  assert.match(first, /header x-a is "one", expected "two"/);
  assert.match(first, /header x-missing is absent, expected "here"/);
  assert.doesNotMatch(first, /x-powered/);
  assert.match(first, /does not contain "nope"/);
  assert.match(first, /json \$\.n is 1, expected 2/);
  assert.match(first, /message consumer\.name is "alice", expected "bob"/);
  assert.match(
    lines[1] ?? '',
    /^not ok - exact ports are exact: ports auth\.success → backend\.success, expected auth\.success;/,
  );
  assert.equal(lines[2], 'ok - a prefix is enough');
  assert.equal(lines[3], 'ok - no route');
  assert.equal(lines[4], '2 passed, 2 failed');
  assert.equal(run.code, 1);
});

/** A small XML well-formedness check: balanced tags, quoted attributes, only known entities. */
function assertWellFormedXml(text: string): void {
  const body = text.replace(/^<\?xml[^?]*\?>\s*/, '');
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let end = 0;
  for (let m = token.exec(body); m !== null; m = token.exec(body)) {
    end = token.lastIndex;
    const [, closing, name, attrs, selfClosing, chars] = m;
    for (const entity of `${attrs ?? ''}${chars ?? ''}`.matchAll(/&[^;\s]*;?/g))
      assert.match(entity[0], /^&(amp|lt|gt|quot|apos);$/, `bad entity ${entity[0]}`);
    if (chars !== undefined) {
      assert.ok(stack.length > 0 || chars.trim() === '', 'text outside the root element');
      continue;
    }
    if (closing === '/') assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    else if (selfClosing !== '/') stack.push(name ?? '');
  }
  assert.equal(end, body.length, `not XML from offset ${end}: ${body.slice(end, end + 40)}`);
  assert.deepEqual(stack, [], 'unclosed elements');
}

test('--junit writes well-formed JUnit XML with one testcase per test and a failure for each failed one', async () => {
  const gateway = writeGateway('broken-junit.yaml', BROKEN_WIRING, ISSUE_TESTS);
  const junit = join(dir.path, 'report.xml');
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway, '--junit', junit]);
  assert.equal(run.code, 1);
  const xml = readFileSync(junit, 'utf8');
  assertWellFormedXml(xml);
  assert.match(xml, /<testsuites tests="3" failures="1" errors="0"/);
  assert.equal([...xml.matchAll(/<testcase /g)].length, 3);
  assert.equal([...xml.matchAll(/<failure /g)].length, 1);
  assert.match(
    xml,
    /<testcase name="a request without a key is refused"[^>]*>\s*<failure message="status 200, expected 401">/,
  );
  assert.match(xml, /auth\.denied → backend\.success/);
});

test('validate runs the tests of gateway.yaml (exit 1 on a failure) and --no-tests skips them', async () => {
  const broken = writeGateway('broken-validate.yaml', BROKEN_WIRING, ISSUE_TESTS);
  const good = writeGateway('good-validate.yaml', RIGHT_WIRING, ISSUE_TESTS);
  // Four processes in parallel, each with its own gateway.
  const [run, json, skipped, passing] = await Promise.all([
    cli(['validate', '--system-config', SYSTEM, '--gateway-config', broken]),
    cli(['validate', '--json', '--system-config', SYSTEM, '--gateway-config', broken]),
    cli(['validate', '--no-tests', '--system-config', SYSTEM, '--gateway-config', broken]),
    cli(['validate', '--system-config', SYSTEM, '--gateway-config', good]),
  ]);
  assert.match(run.stdout, /configuration is valid/);
  assert.match(run.stdout, /not ok - a request without a key is refused: /);
  assert.match(run.stdout, /2 passed, 1 failed\n$/);
  assert.equal(run.code, 1);
  const report = JSON.parse(json.stdout) as {
    valid: boolean;
    tests: { passed: number; failed: number; results: { name: string; failures: string[] }[] };
  };
  assert.equal(report.valid, true);
  assert.equal(report.tests.passed, 2);
  assert.equal(report.tests.failed, 1);
  assert.equal(report.tests.results[0]?.failures[0], 'status 200, expected 401');
  assert.equal(json.code, 1);
  assert.equal(skipped.stdout, 'configuration is valid\n');
  assert.equal(skipped.code, 0);
  assert.match(passing.stdout, /3 passed, 0 failed\n$/);
  assert.equal(passing.code, 0);
});

test('an unreadable or invalid test file, or a gateway.yaml that does not compile, exits 2', async () => {
  const gateway = writeGateway('good-errors.yaml', RIGHT_WIRING, '');
  const invalid = join(dir.path, 'invalid.tests.yaml');
  writeFileSync(invalid, 'tests:\n  - name: no request\n    expect: { status: 200 }\n');
  const uncompilable = join(dir.path, 'uncompilable.yaml');
  writeFileSync(
    uncompilable,
    `routes: [{ name: r, match: { path: / }, policy: missing }]\ntests:\n  - { name: t, request: { path: / }, expect: { status: 200 } }\n`,
  );
  const [missing, bad, broken] = await Promise.all([
    cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway, join(dir.path, 'nope.yaml')]),
    cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway, invalid]),
    cli(['test', '--system-config', SYSTEM, '--gateway-config', uncompilable]),
  ]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read .*nope\.yaml/);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /request/);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /missing/);
  assert.equal(broken.stdout, '');
});

test('the example of docs/config-as-code.md#policy-tests runs as written and prints what the page shows', async () => {
  const page = readFileSync(fileURLToPath(new URL('../../docs/config-as-code.md', import.meta.url)), 'utf8');
  const section = page.slice(page.indexOf('## Policy tests'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  const shown = /```console\n\$ switchyard test --gateway-config gateway\.yaml\n([\s\S]*?)```/.exec(
    section,
  )?.[1];
  assert.ok(yaml !== undefined && shown !== undefined, 'the section has its example and its output');
  const gateway = join(dir.path, 'gateway.yaml');
  writeFileSync(gateway, yaml);
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway]);
  assert.equal(run.stdout, shown);
  assert.equal(run.code, 0);
});

test('every shipped example with a tests: section passes switchyard test', async () => {
  const examples = fileURLToPath(new URL('../../examples/', import.meta.url));
  const withTests = readdirSync(examples)
    .map((name) => join(examples, name, 'gateway.yaml'))
    .filter((file) => existsSync(file) && /^tests:/m.test(readFileSync(file, 'utf8')));
  assert.ok(withTests.length >= 3, `only ${withTests.length} examples have tests`);
  // In parallel: each is its own process and gateway (on its own random port).
  const runs = await Promise.all(
    withTests.map((file) => cli(['test', '--system-config', SYSTEM, '--gateway-config', file])),
  );
  for (const [i, run] of runs.entries()) {
    const file = withTests[i];
    assert.match(run.stdout, /\n\d+ passed, 0 failed\n$/, `${file}:\n${run.stdout}${run.stderr}`);
    assert.doesNotMatch(run.stdout, /^not ok/m, file);
    assert.equal(run.code, 0, file);
  }
});

test('a callout that is not an upstream is mocked when a test names its id, and then opens no socket either', async () => {
  const before = connections;
  const gateway = join(dir.path, 'forward-auth.yaml');
  writeFileSync(
    gateway,
    `routes: [{ name: r, match: { path: /x }, policy: p }]
policies:
  - name: p
    nodes:
      - { id: listener, type: listener }
      - { id: check, type: forward-auth, config: { uri: 'http://127.0.0.1:${targetPort}/verify' } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: check.in }
      - { from: check.success, to: client.in }
      - { from: check.denied, to: client.in }
tests:
  - name: the auth service is mocked
    request: { path: /x }
    upstreams: { check: { status: 202, body: checked } }
    expect: { status: 202, ports_exact: [check.success], body: checked }
`,
  );
  const run = await cli(['test', '--system-config', SYSTEM, '--gateway-config', gateway]);
  assert.equal(run.stdout, 'ok - the auth service is mocked\n1 passed, 0 failed\n');
  assert.equal(run.code, 0);
  assert.equal(connections, before, 'the auth service was not called');
});
