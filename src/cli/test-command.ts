import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadGatewayConfig, type GatewayConfig } from '../config/gateway.js';
import { loadPolicyTests } from '../config/policy-tests.js';
import { ConfigRejected, formatIssues } from '../config/schema-validate.js';
import { loadSystemConfig, parseSystemConfig, type SystemConfig } from '../config/system.js';
import { runPolicyTests, type PolicyTestResult, type SourcedTest } from './policy-test-runner.js';

/** A file or configuration that makes the run impossible: exit 2. */
class TestSetupError extends Error {}

const DEFAULT_SYSTEM = 'config/system.yaml';

/**
 * `switchyard test --system-config S --gateway-config G [FILE…] [--junit F]`
 * (docs/config-as-code.md#policy-tests): the tests of FILE…, or of gateway.yaml's `tests:` when
 * no file is given, each through the real engine with callouts mocked. One line per test, then
 * `N passed, M failed`. Exit 0 all passed, 1 a test failed, 2 errors (a file unreadable or
 * invalid, a configuration that does not compile).
 */
export async function runTestCommand(argv: string[]): Promise<number> {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'system-config': { type: 'string' },
        'gateway-config': { type: 'string', default: 'config/gateway.yaml' },
        junit: { type: 'string' },
      },
    }));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const gatewayPath = values['gateway-config'];
    const system = readSystem(values['system-config']);
    const config = readGateway(gatewayPath);
    const tests: SourcedTest[] =
      positionals.length > 0
        ? positionals.flatMap((file) => readTests(file).map((test) => ({ test, source: file })))
        : (config.tests ?? []).map((test) => ({ test, source: gatewayPath }));
    const results = await runTests(system, config, gatewayPath, tests);
    for (const line of resultLines(results)) process.stdout.write(`${line}\n`);
    if (values.junit !== undefined) writeFileSync(values.junit, junitXml(results));
    return results.some((r) => r.failures.length > 0) ? 1 : 0;
  } catch (err) {
    if (err instanceof TestSetupError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

/**
 * The tests of gateway.yaml's `tests:` section, for `switchyard validate`: undefined when it has
 * none. Throws TestSetupError when the configuration cannot run them.
 */
export async function runGatewayTests(
  systemPath: string | undefined,
  gatewayPath: string,
  config: GatewayConfig = readGateway(gatewayPath),
): Promise<{ results: PolicyTestResult[]; lines: string[] } | undefined> {
  if (config.tests === undefined || config.tests.length === 0) return undefined;
  const tests = config.tests.map((test) => ({ test, source: gatewayPath }));
  const results = await runTests(readSystem(systemPath), config, gatewayPath, tests);
  return { results, lines: resultLines(results) };
}

export { TestSetupError };

async function runTests(
  system: SystemConfig,
  config: GatewayConfig,
  gatewayPath: string,
  tests: SourcedTest[],
): Promise<PolicyTestResult[]> {
  if (tests.length === 0) return [];
  try {
    return await runPolicyTests(system, config, gatewayPath, tests);
  } catch (err) {
    if (err instanceof ConfigRejected)
      throw new TestSetupError(`${gatewayPath}: ${formatIssues(err.issues)}`);
    throw err;
  }
}

/** system.yaml; the defaults when none was named and config/system.yaml does not exist. */
function readSystem(path: string | undefined): SystemConfig {
  try {
    if (path === undefined && !existsSync(DEFAULT_SYSTEM)) return parseSystemConfig('');
    return loadSystemConfig(path ?? DEFAULT_SYSTEM);
  } catch (err) {
    if (err instanceof ConfigRejected)
      throw new TestSetupError(`${path ?? DEFAULT_SYSTEM}: ${formatIssues(err.issues)}`);
    throw err;
  }
}

function readGateway(path: string): GatewayConfig {
  try {
    return loadGatewayConfig(path);
  } catch (err) {
    if (err instanceof ConfigRejected) throw new TestSetupError(`${path}: ${formatIssues(err.issues)}`);
    throw err;
  }
}

function readTests(path: string): ReturnType<typeof loadPolicyTests> {
  try {
    return loadPolicyTests(path);
  } catch (err) {
    if (err instanceof ConfigRejected) throw new TestSetupError(`${path}: ${formatIssues(err.issues)}`);
    throw err;
  }
}

/** `ok - name` / `not ok - name: what differed`, then `N passed, M failed`. */
export function resultLines(results: readonly PolicyTestResult[]): string[] {
  const lines = results.map((r) =>
    r.failures.length === 0 ? `ok - ${r.name}` : `not ok - ${r.name}: ${r.failures.join('; ')}`,
  );
  const failed = results.filter((r) => r.failures.length > 0).length;
  lines.push(`${results.length - failed} passed, ${failed} failed`);
  return lines;
}

const xml = (text: string): string =>
  text
    // XML 1.0 cannot carry these even escaped.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');

/** JUnit XML of a run: one `<testsuite>` with a `<testcase>` per test, `<failure>` on a failure. */
export function junitXml(results: readonly PolicyTestResult[]): string {
  const failed = results.filter((r) => r.failures.length > 0).length;
  const seconds = (ms: number): string => (ms / 1000).toFixed(3);
  const total = results.reduce((sum, r) => sum + r.durationMs, 0);
  const cases = results.map((r) => {
    const open = `    <testcase name="${xml(r.name)}" classname="${xml(r.source)}" time="${seconds(r.durationMs)}"`;
    if (r.failures.length === 0) return `${open}/>`;
    const text = r.failures.join('\n');
    return `${open}>\n      <failure message="${xml(r.failures[0] ?? '')}">${xml(text)}</failure>\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites tests="${results.length}" failures="${failed}" errors="0" time="${seconds(total)}">`,
    `  <testsuite name="switchyard policy tests" tests="${results.length}" failures="${failed}" errors="0" time="${seconds(total)}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
