import { request as httpRequest } from 'node:http';
import type { GatewayConfig } from '../config/gateway.js';
import type { MockAnswer, PolicyTest, PolicyTestExpect } from '../config/policy-tests.js';
import type { SystemConfig } from '../config/system.js';
import type { Context } from '../core/context.js';
import { silentLogger } from '../core/logger.js';
import type { NodeInstance, PluginDefinition, PluginEnv } from '../core/plugin.js';
import type { Trace } from '../debug/trace-types.js';
import { registry } from '../plugins/index.js';

type AnyPlugin = PluginDefinition<never, string>;

/** One test as it ran: what differed from `expect` (empty when it passed), the ports it took. */
export interface PolicyTestResult {
  name: string;
  /** Where the test came from (gateway.yaml or a test file), for JUnit's classname. */
  source: string;
  failures: string[];
  ports: string[];
  durationMs: number;
}

export interface SourcedTest {
  test: PolicyTest;
  source: string;
}

/** Answer time of one test request before it counts as failed. */
const REQUEST_TIMEOUT_MS = 15_000;

/** The mocks of the test running now (tests run one at a time, in order). */
let current: Record<string, MockAnswer> = {};

/**
 * The node types that fetch a response (`relaysResponse`: upstream, ai-proxy), and any node whose
 * id a test names in `upstreams:`, are compiled as a mock under the same id and type: it answers
 * the test's mock, or 200 with the request as JSON, and never opens a socket. The swap is made in
 * this process's registry, which only the test command uses (a gateway process never calls this).
 */
function installMocks(namedIds: ReadonlySet<string>): void {
  const table = registry as Map<string, AnyPlugin>;
  for (const [type, def] of [...table]) {
    const always = def.relaysResponse === true;
    if (!always && namedIds.size === 0) continue;
    const mocked: AnyPlugin = {
      ...def,
      // The echo shows the request body: it is buffered for the mock.
      readsRequestBody: always ? true : (def.readsRequestBody ?? true),
      create: (config, env) => (always || namedIds.has(env.nodeId) ? mockNode(env) : def.create(config, env)),
    };
    table.set(type, mocked);
  }
}

function mockNode(env: PluginEnv): NodeInstance {
  const id = env.nodeId;
  return {
    run(ctx: Context) {
      const answer = current[id];
      // What the backend would send replaces the response: its own status, headers and body.
      ctx.response.headers = {};
      if (answer === undefined) {
        const req = ctx.request;
        ctx.response.json(200, {
          method: req.method,
          path: req.path,
          query: req.rawQuery,
          headers: req.headers,
          body: req.body === null ? null : req.body.toString('utf8'),
        });
      } else {
        ctx.response.status = answer.status;
        for (const [name, value] of Object.entries(answer.headers ?? {}))
          ctx.response.headers[name.toLowerCase()] = value;
        ctx.response.setBody(answer.body ?? '');
      }
      return 'success';
    },
  };
}

/** The system.yaml a test gateway runs with: loopback, no TLS, no Admin API, every request traced. */
function testSystem(system: SystemConfig): SystemConfig {
  const { tls: _tls, admin: _admin, acme: _acme, ...rest } = system;
  const { header_secret: _secret, ...debug } = system.debug;
  return {
    ...rest,
    listener: { ...system.listener, bind: '127.0.0.1', port: 0 },
    workers: 1,
    stream: [],
    access_log: { ...system.access_log, output: 'off' },
    config: { ...system.config, source: 'file', watch: false, persist: false },
    debug: {
      ...debug,
      enabled: true,
      sandbox: false,
      trace_all: true,
      max_traces: 4,
      max_steps: 10_000,
      redact_headers: [],
      redact_query_params: [],
      redact_message_keys: [],
      allowed_cidrs: ['127.0.0.0/8'],
    },
  };
}

/**
 * Runs `tests` in order through an in-process gateway on 127.0.0.1:0 compiled from `config`:
 * the real data plane, router and run loop, callouts answered by mocks. Throws ConfigRejected
 * when the configuration does not compile.
 */
export async function runPolicyTests(
  system: SystemConfig,
  config: GatewayConfig,
  gatewayPath: string | undefined,
  tests: readonly SourcedTest[],
): Promise<PolicyTestResult[]> {
  const named = new Set(tests.flatMap(({ test }) => Object.keys(test.upstreams ?? {})));
  installMocks(named);
  const { Gateway } = await import('../gateway.js');
  const gateway = Gateway.create(
    {
      system: testSystem(system),
      logger: silentLogger,
      ...(gatewayPath === undefined ? {} : { gatewayPath }),
    },
    config,
  );
  const results: PolicyTestResult[] = [];
  try {
    const { port } = await gateway.listen();
    for (const { test, source } of tests) {
      current = test.upstreams ?? {};
      const started = performance.now();
      const before = latestTrace(gateway.debug.store.newest())?.seq ?? -1;
      let failures: string[];
      let ports: string[] = [];
      try {
        const response = await send(port, test);
        const trace = latestTrace(gateway.debug.store.newest());
        const fresh = trace !== undefined && trace.seq > before ? trace : undefined;
        ports = fresh === undefined ? [] : portsOf(fresh);
        const message = fresh === undefined ? {} : (fresh.steps.at(-1)?.after ?? fresh.initial).message;
        failures = compare(test.expect, response, ports, message);
      } catch (err) {
        failures = [`the request failed: ${(err as Error).message}`];
      }
      if (failures.length > 0) failures.push(`ports taken: ${formatPorts(ports)}`);
      results.push({ name: test.name, source, failures, ports, durationMs: performance.now() - started });
    }
  } finally {
    current = {};
    await gateway.shutdown();
    await (await import('../outbound/pool-registry.js')).closeAllPools();
  }
  return results;
}

function latestTrace(newest: Generator<Trace>): Trace | undefined {
  const step = newest.next();
  return step.done === true ? undefined : step.value;
}

/** The ports taken after the listener, as `node.port`; the client (terminal) takes none. */
export function portsOf(trace: Trace): string[] {
  return trace.steps
    .filter((step) => step.node_type !== 'listener' && step.edge !== 'terminal')
    .map((step) => `${step.node_id}.${step.port ?? (step.outcome.kind === 'error' ? 'error' : 'success')}`);
}

const formatPorts = (ports: readonly string[]): string => (ports.length === 0 ? '(none)' : ports.join(' → '));

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(port: number, test: PolicyTest): Promise<Answer> {
  const { method = 'GET', path, headers = {}, body } = test.request;
  const outgoing: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) outgoing[name.toLowerCase()] = value;
  outgoing['host'] ??= 'localhost';
  let payload: Buffer | undefined;
  if (body !== undefined && body !== null) {
    payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    if (typeof body !== 'string') outgoing['content-type'] ??= 'application/json';
    outgoing['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: method.toUpperCase(), path, headers: outgoing, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () =>
      req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const show = (value: unknown): string => JSON.stringify(value);

/** What differs between `expect` and what the gateway did, one phrase each. */
export function compare(
  expect: PolicyTestExpect,
  answer: Answer,
  ports: readonly string[],
  message: Record<string, unknown>,
): string[] {
  const out: string[] = [];
  if (expect.status !== undefined && answer.status !== expect.status)
    out.push(`status ${answer.status}, expected ${expect.status}`);
  const exactList = Array.isArray(expect.ports_exact) ? expect.ports_exact : undefined;
  const wanted = exactList ?? expect.ports;
  if (wanted !== undefined) {
    const exact = exactList !== undefined || expect.ports_exact === true;
    const same = exact
      ? ports.length === wanted.length && wanted.every((p, i) => ports[i] === p)
      : wanted.every((p, i) => ports[i] === p);
    if (!same)
      out.push(
        `ports ${formatPorts(ports)}, expected ${exact ? '' : 'to start with '}${formatPorts(wanted)}`,
      );
  }
  for (const [name, value] of Object.entries(expect.headers ?? {})) {
    const got = answer.headers[name.toLowerCase()];
    const text = Array.isArray(got) ? got.join(', ') : got;
    if (value === null) {
      if (text !== undefined) out.push(`header ${name} is ${show(text)}, expected absent`);
    } else if (text === undefined) out.push(`header ${name} is absent, expected ${show(value)}`);
    else if (text !== value) out.push(`header ${name} is ${show(text)}, expected ${show(value)}`);
  }
  if (expect.body !== undefined && answer.body !== expect.body)
    out.push(`body ${show(clip(answer.body))}, expected ${show(clip(expect.body))}`);
  if (expect.body_contains !== undefined && !answer.body.includes(expect.body_contains))
    out.push(`body ${show(clip(answer.body))} does not contain ${show(expect.body_contains)}`);
  if (expect.json !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      out.push(`body is not JSON: ${show(clip(answer.body))}`);
    }
    if (parsed !== undefined) {
      const where = subsetMismatch(expect.json, parsed, '$');
      if (where !== undefined) out.push(`json ${where}`);
    }
  }
  for (const [key, value] of Object.entries(expect.message ?? {})) {
    if (!(key in message)) out.push(`message ${key} is absent, expected ${show(value)}`);
    else if (subsetMismatch(value, message[key], key, true) !== undefined)
      out.push(`message ${key} is ${show(message[key])}, expected ${show(value)}`);
  }
  return out;
}

const clip = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/**
 * Where `actual` does not hold `expected`: objects by subset (every expected key, with its
 * value), arrays element by element with the same length, scalars equal. `exact`: objects too.
 */
function subsetMismatch(expected: unknown, actual: unknown, at: string, exact = false): string | undefined {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${at} is ${show(actual)}, expected ${show(expected)}`;
    for (let i = 0; i < expected.length; i++) {
      const found = subsetMismatch(expected[i], actual[i], `${at}[${i}]`, exact);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${at} is ${show(actual)}, expected ${show(expected)}`;
    const a = actual as Record<string, unknown>;
    const e = expected as Record<string, unknown>;
    if (exact && Object.keys(a).length !== Object.keys(e).length)
      return `${at} is ${show(actual)}, expected ${show(expected)}`;
    for (const key of Object.keys(e)) {
      if (!(key in a)) return `${at}.${key} is absent, expected ${show(e[key])}`;
      const found = subsetMismatch(e[key], a[key], `${at}.${key}`, exact);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return expected === actual ? undefined : `${at} is ${show(actual)}, expected ${show(expected)}`;
}
