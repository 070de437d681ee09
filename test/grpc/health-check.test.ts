/**
 * The `grpc` active health check (docs/grpc.md, "Health checks"): the
 * gateway calls grpc.health.v1.Health/Check on each target, asking about the
 * configured service; a target that stops answering SERVING leaves the
 * rotation, and comes back when it answers SERVING again.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { waitFor } from '../support/wait.js';
import { loadDemo, type EchoReply, type EchoRequest } from './echo-server.js';

const HEALTH_PROTO = `
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }
`;

type ServiceCtor = grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };

function healthService(): grpc.ServiceDefinition {
  const root = protobuf.parse(HEALTH_PROTO, { keepCase: true }).root;
  const definition = protoLoader.fromJSON(root.toJSON(), { keepCase: true, defaults: true, enums: String });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { health: { v1: { Health: ServiceCtor } } };
  };
  return pkg.grpc.health.v1.Health.service;
}

interface Backend {
  name: string;
  port: number;
  /** What Health/Check answers for `demo.Echo`. */
  status: 'SERVING' | 'NOT_SERVING';
  /** Services the checks asked about. */
  asked: Set<string>;
  calls: number;
  server: grpc.Server;
}

async function startBackend(name: string): Promise<Backend> {
  const backend: Backend = {
    name,
    port: 0,
    status: 'SERVING',
    asked: new Set(),
    calls: 0,
    server: new grpc.Server(),
  };
  backend.server.addService(healthService(), {
    Check: (
      call: grpc.ServerUnaryCall<{ service: string }, { status: string }>,
      callback: grpc.sendUnaryData<{ status: string }>,
    ) => {
      backend.asked.add(call.request.service);
      if (call.request.service !== 'demo.Echo') {
        callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
        return;
      }
      callback(null, { status: backend.status });
    },
  });
  backend.server.addService(loadDemo().Echo.service, {
    Unary: (call: grpc.ServerUnaryCall<EchoRequest, EchoReply>, callback: grpc.sendUnaryData<EchoReply>) => {
      backend.calls++;
      callback(null, { message: `${name}:${call.request.message}`, index: 0 });
    },
  });
  backend.port = await new Promise<number>((resolve, reject) =>
    backend.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return backend;
}

type Echo = grpc.Client & {
  Unary(req: EchoRequest, md: grpc.Metadata, cb: grpc.requestCallback<EchoReply>): grpc.ClientUnaryCall;
};

let a: Backend;
let b: Backend;
let gw: RunningGateway;
let echo: Echo;

before(async () => {
  a = await startBackend('a');
  b = await startBackend('b');
  gw = await startGateway(`
routes:
  - { name: echo, match: { path: /demo.Echo/* }, policy: echo }
policies:
  - name: echo
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config:
          scheme: grpc
          load_balancing: round_robin
          retries: 0   # no retry and no passive ejection: only the active check can steer calls away
          targets: [{ host: 127.0.0.1, port: ${a.port} }, { host: 127.0.0.1, port: ${b.port} }]
          health_check:
            passive: { max_fails: 0 }
            active: { type: grpc, grpc_service: demo.Echo, interval_ms: 50, timeout_ms: 1000, unhealthy_threshold: 2, healthy_threshold: 2 }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
      - { from: up.error, to: out.in }
`);
  echo = new (loadDemo().Echo)(`127.0.0.1:${gw.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
});

after(async () => {
  echo?.close();
  await gw?.stop();
  a?.server.forceShutdown();
  b?.server.forceShutdown();
});

function call(message: string): Promise<string> {
  return new Promise((resolve, reject) =>
    echo.Unary({ message }, new grpc.Metadata(), (err, value) =>
      err ? reject(err) : resolve(value?.message ?? ''),
    ),
  );
}

/** Which backends answered `n` calls in a row. */
async function whoAnswers(n: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add((await call(`m${i}`)).split(':')[0]!);
  return seen;
}

test('grpc health check: both SERVING targets share the calls, and the check asks about the configured service', async () => {
  await waitFor(() => a.asked.size > 0 && b.asked.size > 0, { what: 'a health check on each target' });
  assert.deepEqual([...a.asked], ['demo.Echo']);
  assert.deepEqual([...b.asked], ['demo.Echo']);
  assert.deepEqual([...(await whoAnswers(4))].sort(), ['a', 'b']);
});

test('grpc health check: a target that answers NOT_SERVING leaves the rotation, and returns once SERVING', async () => {
  a.status = 'NOT_SERVING';
  // Two failed checks (50 ms apart) take it out: then every call lands on b.
  await waitFor(async () => (await whoAnswers(4)).size === 1, {
    what: 'a to leave the rotation',
    timeoutMs: 20_000,
  });
  const callsOnA = a.calls;
  assert.deepEqual([...(await whoAnswers(6))], ['b']);
  assert.equal(a.calls, callsOnA, 'no call reached the NOT_SERVING target');

  a.status = 'SERVING';
  await waitFor(async () => (await whoAnswers(4)).has('a'), {
    what: 'a to rejoin the rotation',
    timeoutMs: 20_000,
  });
});

test('grpc health check: a target that is down (connection refused) leaves the rotation', async () => {
  b.server.forceShutdown();
  // With retries: 0, a call that still picks b fails: only the check's verdict makes every call succeed.
  await waitFor(
    async () => {
      try {
        return [...(await whoAnswers(4))].join() === 'a';
      } catch {
        return false;
      }
    },
    { what: 'only a to answer', timeoutMs: 20_000 },
  );
});

test('grpc health check: type grpc on an http upstream fails the load, naming the key', async () => {
  await assert.rejects(
    startGateway(`
routes:
  - { name: r, match: { path: /r }, policy: p }
policies:
  - name: p
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: 1 }], health_check: { active: { type: grpc } } } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`),
    /health_check\.active\.type/,
  );
});
