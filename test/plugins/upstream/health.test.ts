import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { PassiveHealth } from '../../../src/outbound/health/passive.js';
import { echo, startOrigin, type Origin, type OriginHandler } from '../../support/origins.js';
import { capturingLogger, requestContext } from '../../support/plugin-env.js';
import { waitFor } from '../../support/wait.js';
import { answeredBy, closeAll, createUpstream, stateOf } from './helpers.js';
import { failsWith, runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

async function origin(name: string, handler: OriginHandler = echo(name), port?: number): Promise<Origin> {
  const started = await startOrigin(handler, port === undefined ? { name } : { name, port });
  origins.push(started);
  return started;
}

test('upstream passive health: a failing target is ejected, then readmitted after fail_timeout once it recovers', async () => {
  const a = await origin('a');
  const b = await origin('b');
  const bPort = b.port;
  await b.close(); // b is down: connections refused
  const { logger, records } = capturingLogger();
  const { node } = createUpstream(
    {
      targets: [a.target, { host: '127.0.0.1', port: bPort }],
      health_check: { passive: { max_fails: 2, fail_timeout_seconds: 0.3 } },
    },
    { logger },
  );
  const bAddress = `127.0.0.1:${bPort}`;

  // Every request still succeeds (connect failures are retried on a), until b is ejected.
  for (let i = 0; i < 10 && stateOf(node, bAddress).available; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    assert.equal(answeredBy(ctx), 'a');
  }
  const ejected = stateOf(node, bAddress);
  assert.equal(ejected.available, false, 'b was never ejected');
  assert.equal(ejected.consecutiveFailures, 2);
  assert.ok(records.some((r) => r.msg === 'upstream target ejected' && r.target === bAddress));

  // b comes back on the same port; it gets traffic again only once the ejection window is over.
  await origin('b', echo('b'), bPort);
  let backAt = 0;
  await waitFor(
    async () => {
      const ctx = requestContext();
      await runOk(node, ctx);
      if (answeredBy(ctx) !== 'b') return false;
      backAt = Date.now(); // not before the pick, which saw b available
      return true;
    },
    { timeoutMs: 5000, what: 'b to be readmitted' },
  );
  assert.ok(backAt >= ejected.ejectedUntil, 'b got traffic while ejected');
  assert.equal(stateOf(node, bAddress).consecutiveFailures, 0);
  assert.equal(stateOf(node, bAddress).available, true);
});

test('upstream passive health: when every target is ejected the request is still tried', async () => {
  const x = await origin('x');
  const port = x.port;
  await x.close();
  const { node } = createUpstream({
    targets: [{ host: '127.0.0.1', port }],
    health_check: { passive: { max_fails: 1, fail_timeout_seconds: 60 } },
  });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.equal(stateOf(node, `127.0.0.1:${port}`).available, false);
  await origin('x', echo('x'), port);
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'x');
});

test('upstream passive health: 5xx answers are responses, not failures', async () => {
  const failing = await origin('f', (_req, res) => {
    res.writeHead(503, { 'x-origin': 'f' });
    res.end('busy');
  });
  const { node } = createUpstream({ targets: [failing.target], health_check: { passive: { max_fails: 1 } } });
  for (let i = 0; i < 3; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    assert.equal(ctx.response.status, 503);
  }
  assert.equal(stateOf(node, `127.0.0.1:${failing.port}`).available, true);
});

test('upstream passive health: readmission is half-open — one more failure ejects again, a success clears', () => {
  const health = new PassiveHealth({ maxFails: 3, failTimeoutMs: 1000 });
  assert.equal(health.failed(0), false);
  assert.equal(health.failed(0), false);
  assert.equal(health.failed(0), true);
  assert.equal(health.isEjected(999), true);
  assert.equal(health.isEjected(1000), false);
  assert.equal(health.failed(1500), true, 'first failure after readmission ejects again');
  assert.equal(health.isEjected(2000), true);
  assert.equal(health.failed(2100), false, 'already out: the window is extended, not reported again');
  assert.equal(health.isEjected(3000), true);
  health.succeeded();
  assert.equal(health.consecutiveFailures, 0);
  assert.equal(health.failed(5000), false);
});

test('upstream active health: probes mark a target down and back up; close() stops them', async () => {
  let bHealthy = true;
  const probeAware =
    (name: string, healthy: () => boolean): OriginHandler =>
    (req, res, body) => {
      if (req.url === '/healthz') {
        res.writeHead(healthy() ? 200 : 503);
        res.end();
      } else echo(name)(req, res, body);
    };
  const a = await origin(
    'a',
    probeAware('a', () => true),
  );
  const b = await origin(
    'b',
    probeAware('b', () => bHealthy),
  );
  const { logger, records } = capturingLogger();
  const { node } = createUpstream(
    {
      targets: [a.target, b.target],
      health_check: {
        active: {
          path: '/healthz',
          interval_ms: 20,
          timeout_ms: 500,
          unhealthy_threshold: 2,
          healthy_threshold: 2,
        },
      },
    },
    { logger },
  );
  const bAddress = `127.0.0.1:${b.port}`;

  bHealthy = false;
  await waitFor(() => !stateOf(node, bAddress).probeUp, { what: 'b marked down' });
  assert.ok(records.some((r) => r.msg === 'upstream target marked down' && r.target === bAddress));
  for (let i = 0; i < 6; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    assert.equal(answeredBy(ctx), 'a');
  }

  bHealthy = true;
  await waitFor(() => stateOf(node, bAddress).probeUp, { what: 'b marked up' });
  const seen = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    seen.add(answeredBy(ctx));
  }
  assert.deepEqual([...seen].sort(), ['a', 'b']);

  const probe = b.requests.find((r) => r.url === '/healthz')!;
  assert.equal(probe.headers.host, bAddress);
  assert.equal(probe.headers['user-agent'], 'switchyard-health-check');

  // After close() no further probes: another checker's probes show time passing.
  node.close();
  const probesAtClose = a.requests.filter((r) => r.url === '/healthz').length;
  const witness = await origin(
    'w',
    probeAware('w', () => true),
  );
  createUpstream({
    targets: [witness.target],
    health_check: { active: { path: '/healthz', interval_ms: 20 } },
  });
  await witness.received(5);
  const probesNow = a.requests.filter((r) => r.url === '/healthz').length;
  assert.ok(probesNow <= probesAtClose + 1, `probes went on after close: ${probesAtClose} → ${probesNow}`);
});
