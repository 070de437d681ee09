import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamPool } from '../../src/stream/pool.js';

const targets = (...weights: number[]) =>
  weights.map((weight, i) => ({ host: `10.0.0.${i + 1}`, port: 9000 + i, weight }));

function firsts(pool: StreamPool, n: number, ip = '192.0.2.1'): string[] {
  return Array.from({ length: n }, () => pool.order(ip)[0]?.host.slice(-1) ?? '-');
}

test('stream pool: smooth weighted round robin spreads a heavy target out', () => {
  const pool = new StreamPool({ targets: targets(5, 1, 1), load_balancing: 'round_robin' });
  assert.deepEqual(firsts(pool, 7), ['1', '1', '2', '1', '3', '1', '1']);
});

test('stream pool: the order lists the choice first and every other target after it, for failover', () => {
  const pool = new StreamPool({ targets: targets(1, 1, 1), load_balancing: 'round_robin' });
  const order = pool.order('192.0.2.1').map((t) => t.host);
  assert.equal(order.length, 3);
  assert.equal(new Set(order).size, 3);
});

test('stream pool: weight 0 takes a target out of rotation', () => {
  const pool = new StreamPool({ targets: targets(0, 1), load_balancing: 'round_robin' });
  assert.deepEqual(firsts(pool, 3), ['2', '2', '2']);
  assert.deepEqual(
    pool.order('x').map((t) => t.host),
    ['10.0.0.2'],
  );
});

test('stream pool: least_connections picks the target with fewest open connections per weight', () => {
  const pool = new StreamPool({ targets: targets(1, 1), load_balancing: 'least_connections' });
  const [a, b] = pool.targets;
  assert.ok(a && b);
  a.active = 3;
  b.active = 1;
  assert.deepEqual(firsts(pool, 3), ['2', '2', '2']);
  b.active = 5;
  assert.equal(pool.order('x')[0], a);
});

test('stream pool: ip_hash sends one client to one target and spreads clients over all', () => {
  const pool = new StreamPool({ targets: targets(1, 1, 1), load_balancing: 'ip_hash' });
  for (const ip of ['192.0.2.7', '2001:db8::1']) {
    const seen = new Set(firsts(pool, 5, ip));
    assert.equal(seen.size, 1, `${ip} moved between targets`);
  }
  const used = new Set<string>();
  for (let i = 0; i < 200; i++) used.add(pool.order(`198.51.100.${i}`)[0]?.host ?? '');
  assert.equal(used.size, 3);
});

test('stream pool: setTargets replaces the set; a kept target keeps its live connection count', () => {
  const pool = new StreamPool({ targets: targets(1, 1), load_balancing: 'least_connections' });
  const kept = pool.targets[1]!;
  kept.active = 3;
  pool.setTargets([
    { host: '10.0.0.2', port: 9001, weight: 1 },
    { host: '10.0.0.9', port: 9009, weight: 1 },
    { host: '10.0.0.8', port: 9008, weight: 0 },
  ]);
  assert.deepEqual(
    pool.targets.map((t) => t.address),
    ['10.0.0.2:9001', '10.0.0.9:9009'],
  );
  assert.equal(pool.targets[0], kept, 'the same target object, with its count');
  assert.equal(pool.targets[0].active, 3);
  // least_connections sends new connections to the idle newcomer.
  assert.deepEqual(firsts(pool, 2), ['9', '9']);
  pool.setTargets([]);
  assert.deepEqual(pool.order('192.0.2.1'), []);
});
