import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Dispatcher } from 'undici';
import { ConsistentHashBalancer } from '../../../src/outbound/balancer/chash.js';
import { Target } from '../../../src/outbound/target.js';
import { echo, gate, startOrigin, type Origin, type OriginHandler } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { answeredBy, closeAll, createUpstream } from './helpers.js';
import { runOk } from '../../support/node-run.js';

const origins: Origin[] = [];
after(async () => {
  await closeAll();
  await Promise.all(origins.map((o) => o.close()));
});

async function named(name: string, handler: OriginHandler = echo(name)): Promise<Origin> {
  const origin = await startOrigin(handler, { name });
  origins.push(origin);
  return origin;
}

function tally(names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
}

test('upstream round_robin: weights 5/1/1 give exactly 50/10/10 over 70 requests, interleaved', async () => {
  const [a, b, c] = await Promise.all([named('a'), named('b'), named('c')]);
  const { node } = createUpstream({
    targets: [
      { ...a.target, weight: 5 },
      { ...b.target, weight: 1 },
      { ...c.target, weight: 1 },
    ],
  });
  const seen: string[] = [];
  for (let i = 0; i < 70; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    seen.push(answeredBy(ctx));
  }
  assert.deepEqual(tally(seen), { a: 50, b: 10, c: 10 });
  // Smooth (nginx's sequence): the light targets are interleaved, not served after a burst of five.
  assert.deepEqual(seen.slice(0, 7), ['a', 'a', 'b', 'a', 'c', 'a', 'a']);
});

test('upstream round-robin spelling and equal weights alternate targets', async () => {
  const [a, b] = await Promise.all([named('a'), named('b')]);
  const { node } = createUpstream({ targets: [a.target, b.target], load_balancing: 'round-robin' });
  const seen: string[] = [];
  for (let i = 0; i < 6; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    seen.push(answeredBy(ctx));
  }
  assert.deepEqual(tally(seen), { a: 3, b: 3 });
  assert.notEqual(seen[0], seen[1]);
});

test('upstream least_connections: a target busy with a slow request gets no new ones', async () => {
  const hold = gate();
  const handler =
    (name: string): OriginHandler =>
    async (req, res, body) => {
      if (req.url === '/slow') await hold.wait;
      echo(name)(req, res, body);
    };
  const [a, b] = await Promise.all([named('a', handler('a')), named('b', handler('b'))]);
  const { node } = createUpstream({ targets: [a.target, b.target], load_balancing: 'least_connections' });
  const slowCtx = requestContext({ url: '/slow' });
  const slow = runOk(node, slowCtx);
  await Promise.race([a.received(1), b.received(1)]);
  const busy = a.requests.length === 1 ? 'a' : 'b';
  const seen: string[] = [];
  for (let i = 0; i < 6; i++) {
    const ctx = requestContext({ url: '/fast' });
    await runOk(node, ctx);
    seen.push(answeredBy(ctx));
  }
  assert.ok(!seen.includes(busy), `requests went to the busy target: ${seen.join(',')}`);
  hold.release();
  await slow;
  assert.equal(answeredBy(slowCtx), busy);
});

test('upstream least-conn spelling via the legacy load_balancer key is accepted', async () => {
  const a = await named('a');
  const { node, env } = createUpstream({ targets: [a.target], load_balancer: 'least-conn' });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'a');
  assert.deepEqual(env.warnings, []);
});

test('upstream chash on http_x_user: a key always lands on the same target, keys spread', async () => {
  const all = await Promise.all([named('a'), named('b'), named('c')]);
  const { node } = createUpstream({
    targets: all.map((o) => o.target),
    load_balancing: 'chash',
    hash_on: 'http_x_user',
  });
  const owner = new Map<string, string>();
  for (let round = 0; round < 3; round++) {
    for (let user = 0; user < 30; user++) {
      const ctx = requestContext({ headers: { host: 'gw', 'x-user': `user-${user}` } });
      await runOk(node, ctx);
      const name = answeredBy(ctx);
      if (round === 0) owner.set(`user-${user}`, name);
      else assert.equal(name, owner.get(`user-${user}`), `user-${user} moved`);
    }
  }
  assert.ok(new Set(owner.values()).size >= 2, 'all keys landed on one target');
});

test('upstream chash: adding a target moves only the keys it takes over, and few of them', () => {
  const fake = null as unknown as Dispatcher;
  const policy = { maxFails: 0, failTimeoutMs: 1 };
  const make = (n: number): Target[] =>
    Array.from(
      { length: n },
      (_, i) => new Target(i, { host: `10.0.0.${i + 1}`, port: 80, weight: 1 }, fake, policy, null),
    );
  const four = new ConsistentHashBalancer(make(4), () => '');
  const five = new ConsistentHashBalancer(make(5), () => '');
  let moved = 0;
  const keys = 4000;
  for (let k = 0; k < keys; k++) {
    const before = four.pickByKey(`key-${k}`, 0, null, false)!.address;
    const after = five.pickByKey(`key-${k}`, 0, null, false)!.address;
    if (before !== after) {
      moved++;
      assert.equal(after, '10.0.0.5:80', 'a key moved between two old targets');
    }
  }
  // Ideal is 1/5 of the keys; allow for ring noise.
  assert.ok(moved > keys * 0.1 && moved < keys * 0.3, `moved ${moved} of ${keys}`);
});

test('upstream chash: keys of an unavailable target move, the others stay', () => {
  const fake = null as unknown as Dispatcher;
  const policy = { maxFails: 1, failTimeoutMs: 60_000 };
  const targets = Array.from(
    { length: 3 },
    (_, i) => new Target(i, { host: `10.0.1.${i + 1}`, port: 80, weight: 1 }, fake, policy, null),
  );
  const ring = new ConsistentHashBalancer(targets, () => '');
  const now = Date.now();
  const before = Array.from({ length: 600 }, (_, k) => ring.pickByKey(`k${k}`, now, null, true)!);
  targets[1]!.passive.failed(now);
  for (let k = 0; k < 600; k++) {
    const after = ring.pickByKey(`k${k}`, now, null, true)!;
    if (before[k] === targets[1]) assert.notEqual(after, targets[1]);
    else assert.equal(after, before[k]);
  }
});

test('upstream ip_hash: one client IP sticks to one target, IPs spread', async () => {
  const all = await Promise.all([named('a'), named('b'), named('c')]);
  const { node } = createUpstream({ targets: all.map((o) => o.target), load_balancing: 'ip_hash' });
  const owners = new Set<string>();
  for (let ip = 1; ip <= 20; ip++) {
    let first: string | undefined;
    for (let i = 0; i < 3; i++) {
      const ctx = requestContext({ remoteAddress: `198.51.100.${ip}`, remotePort: 1000 + i });
      await runOk(node, ctx);
      first ??= answeredBy(ctx);
      assert.equal(answeredBy(ctx), first, 'the client port must not matter');
    }
    owners.add(first!);
  }
  assert.ok(owners.size >= 2);
});

test('upstream ewma: the faster target gets most of the traffic', async () => {
  const fast = await named('fast');
  const slowHandler: OriginHandler = (req, res, body) => {
    setTimeout(echo('slow'), 300, req, res, body);
  };
  const slow = await named('slow', slowHandler);
  const { node } = createUpstream({ targets: [fast.target, slow.target], load_balancing: 'ewma' });
  const seen: string[] = [];
  for (let i = 0; i < 12; i++) {
    const ctx = requestContext();
    await runOk(node, ctx);
    seen.push(answeredBy(ctx));
  }
  const counts = tally(seen);
  assert.ok((counts.fast ?? 0) >= 9, JSON.stringify(counts));
});
