// Pure (no DOM): test/ui/policy-test-entry.test.ts runs what it builds through `switchyard test`.

/** A mocked node's answer: the `upstreams:` format of a policy test (docs/config-as-code.md#policy-tests). */
export interface MockAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** One entry of gateway.yaml `tests:`, as `switchyard test` reads it. */
export interface PolicyTestEntry {
  name: string;
  request: { method: string; path: string; headers?: Record<string, string>; body?: string };
  upstreams?: Record<string, MockAnswer>;
  expect: { status: number; ports: string[] };
}

/** What a sandbox run was asked. */
export interface SandboxAsk {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  mocks: Record<string, MockAnswer>;
}

/** The parts of a trace a test is built from (docs/debugging.md). */
export interface RunOutcome {
  status: number;
  steps: readonly {
    node_id: string;
    node_type: string;
    edge: string;
    port?: string;
    outcome: { kind: string };
  }[];
}

/** The ports taken after the listener, as `node.port`, the way `switchyard test` lists them. */
export const portsTaken = (run: RunOutcome): string[] =>
  run.steps
    .filter((s) => s.node_type !== 'listener' && s.edge !== 'terminal')
    .map((s) => `${s.node_id}.${s.port ?? (s.outcome.kind === 'error' ? 'error' : 'success')}`);

/**
 * A policy test that pins what this run did: the same request and mocks, expecting its status
 * and the ports it took. The test goes through the router, so the path must reach the policy.
 */
export function testFromRun(name: string, ask: SandboxAsk, run: RunOutcome): PolicyTestEntry {
  const headers = Object.fromEntries(Object.entries(ask.headers).filter(([k]) => k.trim() !== ''));
  return {
    name,
    request: {
      method: ask.method,
      path: ask.path,
      ...(Object.keys(headers).length === 0 ? {} : { headers }),
      ...(ask.body === '' ? {} : { body: ask.body }),
    },
    ...(Object.keys(ask.mocks).length === 0 ? {} : { upstreams: ask.mocks }),
    expect: { status: run.status, ports: portsTaken(run) },
  };
}

/** `GET /hello` → 200 via m.success: a default name a reader can tell apart from the others. */
export const defaultTestName = (ask: SandboxAsk, run: RunOutcome): string =>
  `${ask.method} ${ask.path} answers ${run.status}${Object.keys(ask.mocks).length > 0 ? ' (mocked)' : ''}`;
