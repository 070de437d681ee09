import type { MockAnswer, PolicyTest } from '../config/policy-tests.js';
import { yamlLibrary } from '../config/yaml-data.js';
import { REDACTED } from '../debug/redaction.js';
import type { BodyCapture } from '../debug/snapshot.js';
import type { Trace } from '../debug/trace-types.js';
import { NO_ROUTE_POLICY } from '../debug/trace-types.js';
import type { Gateway } from '../gateway.js';
import { registry } from '../plugins/index.js';
import { adminError, bodyLimitsOf, json, notFound, readJsonObject } from './http.js';
import { scrubSecretLiterals, secretLiterals } from './mcp/secrets.js';
import type { AdminRoute } from './router.js';

/**
 * A stored debug trace as a policy test (docs/config-as-code.md#a-test-from-a-trace, issue 34
 * item 3): the request as it arrived, every node that fetched a response answered by a mock of
 * what it got, and `expect` the status and the exact ports taken. Traces are redacted when they
 * are captured; a redacted value is left out of the test (never written as `<redacted>`), and
 * values the configuration renders from secrets are scrubbed, so the test can go into Git.
 */
export interface TraceTest {
  test: PolicyTest;
  /** What the test could not carry over (a redacted header, a body not captured), one line each. */
  notes: string[];
}

/** Request headers the test client sets itself, or that describe one connection only. */
const CONNECTION_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'expect',
]);

/** Response headers a mock must not copy: the test gateway frames and dates its own answer. */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);

/** The node types that fetch a response (upstream, ai-proxy…): `switchyard test` mocks them. */
function fetchesResponse(type: string): boolean {
  return registry.get(type)?.relaysResponse === true;
}

function headersOf(
  from: Record<string, string[]>,
  skip: ReadonlySet<string>,
  side: string,
  notes: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, values] of Object.entries(from)) {
    const lower = name.toLowerCase();
    if (skip.has(lower) || lower.startsWith(':')) continue;
    if (values.some((v) => v === REDACTED)) {
      notes.push(`${side} header ${lower}: redacted in the trace, left out`);
      continue;
    }
    out[lower] = values.join(', ');
  }
  return out;
}

/** The body text when the trace holds it whole; else a note and undefined. */
function bodyOf(body: BodyCapture, side: string, notes: string[]): string | undefined {
  if (body.streamed === true) notes.push(`${side} body: streamed, not in the trace; left out`);
  else if (body.len === 0) return undefined;
  else if (body.binary === true) notes.push(`${side} body: binary (${body.len} bytes), left out`);
  else if (body.truncated === true) notes.push(`${side} body: cut at debug.max_body_bytes, left out`);
  else if (body.text === undefined)
    notes.push(`${side} body: not captured (debug.capture_bodies is off), left out`);
  else return body.text;
  return undefined;
}

/** The ports taken after the listener, as `node.port` (the `switchyard test` convention). */
function portsOf(trace: Trace): string[] {
  return trace.steps
    .filter((step) => step.node_type !== 'listener' && step.edge !== 'terminal')
    .map((step) => `${step.node_id}.${step.port ?? (step.outcome.kind === 'error' ? 'error' : 'success')}`);
}

/** Builds the test; `literals` are secret values to scrub (secretLiterals of the running config). */
export function traceToTest(
  trace: Trace,
  name: string | undefined,
  literals: ReadonlySet<string>,
): TraceTest {
  const notes: string[] = [];
  const initial = trace.initial.request;
  const query = new URLSearchParams();
  for (const [key, values] of Object.entries(initial.query_params)) {
    for (const value of values) {
      if (value === REDACTED) {
        notes.push(`query parameter ${key}: redacted in the trace, left out`);
        break;
      }
      query.append(key, value);
    }
  }
  const search = query.toString();
  const headers = headersOf(initial.headers, CONNECTION_HEADERS, 'request', notes);
  if (headers['host'] === undefined && initial.host !== '') headers['host'] = initial.host;
  const body = bodyOf(initial.body, 'request', notes);

  const upstreams: Record<string, MockAnswer> = {};
  for (const step of trace.steps) {
    if (!fetchesResponse(step.node_type) || step.node_id in upstreams) continue;
    if (step.outcome.kind === 'error') {
      notes.push(
        `node ${step.node_id} failed (${step.outcome.code}); a mock always answers, so the test expects what the trace shows only if that failure is handled the same way`,
      );
      continue;
    }
    const response = step.after.response;
    const mock: MockAnswer = { status: response.status_code };
    const mockHeaders = headersOf(response.headers, FRAMING_HEADERS, `node ${step.node_id} response`, notes);
    if (Object.keys(mockHeaders).length > 0) mock.headers = mockHeaders;
    const text = bodyOf(response.body, `node ${step.node_id} response`, notes);
    if (text !== undefined) mock.body = text;
    upstreams[step.node_id] = mock;
  }

  const test: PolicyTest = {
    name: name ?? `trace ${trace.id}: ${trace.method} ${trace.path} → ${trace.status}`,
    request: {
      method: initial.method,
      path: `${initial.path}${search === '' ? '' : `?${search}`}`,
      ...(Object.keys(headers).length === 0 ? {} : { headers }),
      ...(body === undefined ? {} : { body }),
    },
    ...(Object.keys(upstreams).length === 0 ? {} : { upstreams }),
    expect: { status: trace.status, ports: portsOf(trace), ports_exact: true },
  };
  return { test: scrubSecretLiterals(test, literals), notes };
}

/** `tests:` YAML with the notes as comments above it. */
export function traceTestYaml(made: TraceTest): string {
  const head = made.notes.map((n) => `# ${n}\n`).join('');
  return `${head}${yamlLibrary().stringify({ tests: [made.test] })}`;
}

/** The test for trace `id` of `gateway`, or the Admin error to answer. */
export function testForTrace(gateway: Gateway, id: string, name: string | undefined): TraceTest {
  const trace = gateway.debug.store.get(id);
  if (trace === undefined) throw notFound();
  if (trace.policy === NO_ROUTE_POLICY)
    throw adminError('unprocessable', {
      message: `trace ${id} matched no route: there is no policy to test`,
    });
  const literals = secretLiterals(gateway.runtime.config, gateway.env, gateway.debug.capture.redaction);
  return traceToTest(trace, name, literals);
}

/**
 * `POST /api/debug/traces/:id/test` (admin only: a write-role route, though it writes nothing,
 * because the test carries request details): answers the `tests:` YAML, or `{tests, notes}` as
 * JSON with `Accept: application/json`. Body (optional): `{name}`.
 */
export function traceTestRoutes(gateway: Gateway): AdminRoute[] {
  return [
    {
      method: 'POST',
      path: '/api/debug/traces/:id/test',
      auth: true,
      handler: async ({ req, params }) => {
        if (!gateway.debug.enabled) throw notFound();
        const hasBody =
          req.headers['transfer-encoding'] !== undefined ||
          (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
        const input = hasBody ? await readJsonObject(req, bodyLimitsOf(gateway.system)) : {};
        const name = input['name'];
        if (name !== undefined && (typeof name !== 'string' || name.trim() === ''))
          throw adminError('bad_request', { message: 'name must be a non-empty string' });
        const made = testForTrace(gateway, params['id'] ?? '', name);
        if (/application\/json/i.test(req.headers.accept ?? ''))
          return json(200, { tests: [made.test], notes: made.notes });
        return { status: 200, contentType: 'application/yaml; charset=utf-8', body: traceTestYaml(made) };
      },
    },
  ];
}
