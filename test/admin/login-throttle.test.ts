import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientKey, LoginThrottle } from '../../src/admin/login-throttle.js';
import { waitFor } from '../support/wait.js';
import { basic } from './harness.js';
import { logLines, rawRequest, spawnedConfig, startSpawned } from './spawned.js';

const WRONG = 'Wr0ng-Guess-Password';

const system = (throttle: string) =>
  [
    'listener: { bind: 127.0.0.1, port: @DATA_PORT@ }',
    'logging: { level: info, format: json }',
    'timeouts: { shutdown_timeout_seconds: 2 }',
    'admin:',
    '  port: @ADMIN_PORT@',
    '  username: admin',
    '  password: "correct horse"',
    '  users: [{ username: ops, password: "ops-secret-123" }]',
    `  login_throttle: ${throttle}`,
    '',
  ].join('\n');

test('admin login throttle (M1): 30 wrong passwords → 429 + Retry-After; the right one is refused from that address until the lock ends, other addresses unaffected', async () => {
  const config = await spawnedConfig(system('{ max_failures: 10, window_seconds: 60, lock_seconds: 3 }'));
  const p = await startSpawned(config);
  const url = `http://127.0.0.1:${config.adminPort}/api/status`;
  try {
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 30; i++) {
      const res = await rawRequest(url, { headers: { authorization: basic('admin', WRONG) } });
      statuses.push(res.status);
      if (res.status === 429) retryAfter = res.headers['retry-after'] as string;
    }
    assert.deepEqual(statuses.slice(0, 9), Array<number>(9).fill(401), 'the first failures are plain 401s');
    assert.equal(statuses[9], 429, 'the 10th failure locks the address');
    assert.ok(
      statuses.slice(9).every((s) => s === 429),
      `locked afterwards: ${statuses.join(',')}`,
    );
    assert.ok(retryAfter !== undefined && Number(retryAfter) >= 1 && Number(retryAfter) <= 3, retryAfter);

    // The right password from the locked address is refused too, or guessing would go on.
    const right = await rawRequest(url, { headers: { authorization: basic() } });
    assert.equal(right.status, 429);
    assert.ok(Number(right.headers['retry-after']) >= 1);

    // Another client address (127.0.0.2 is loopback too) is not affected.
    const other = await rawRequest(url, { headers: { authorization: basic() }, localAddress: '127.0.0.2' });
    assert.equal(other.status, 200);
    const otherUser = await rawRequest(url, {
      headers: { authorization: basic('ops', 'ops-secret-123') },
      localAddress: '127.0.0.2',
    });
    assert.equal(otherUser.status, 200);
    // The probes stay open for the locked address.
    assert.equal((await rawRequest(`http://127.0.0.1:${config.adminPort}/healthz`)).status, 200);

    // Once the lock ends the right password works again from the first address.
    await waitFor(
      async () => (await rawRequest(url, { headers: { authorization: basic() } })).status === 200,
      { timeoutMs: 15000, intervalMs: 250, what: 'the lock to end' },
    );

    const lines = logLines(p.output());
    const failures = lines.filter((l) => l.msg === 'admin login failed');
    const locks = lines.filter((l) => String(l.msg).startsWith('admin login locked'));
    assert.equal(failures.length, 10, 'one line per failure up to the lock, none while locked');
    assert.equal(locks.length, 1, 'one line per lock');
    for (const l of failures) {
      assert.equal(l.user, 'admin');
      assert.match(String(l.client), /127\.0\.0\.1/);
    }
    assert.deepEqual(locks[0]?.users, ['admin']);
    assert.equal(locks[0]?.lock_seconds, 3);
    assert.equal(p.output().includes(WRONG), false, 'the password never reaches the log');
    assert.equal(p.output().includes('correct horse'), false);
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin login throttle (M1): a flood of wrong passwords logs a bounded number of lines', async () => {
  const config = await spawnedConfig(system('{ max_failures: 10, window_seconds: 60, lock_seconds: 60 }'));
  const p = await startSpawned(config);
  const url = `http://127.0.0.1:${config.adminPort}/api/routes`;
  try {
    const sent = 400;
    // In waves of 50: the admin listener caps open connections (admin.max_connections).
    const replies = [];
    for (let wave = 0; wave < sent / 50; wave++) {
      replies.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, (_, j) => {
            const i = wave * 50 + j;
            return rawRequest(url, { headers: { authorization: basic(`user${i % 3}`, `${WRONG}${i}`) } });
          }),
        )),
      );
    }
    const counts = new Map<number, number>();
    for (const r of replies) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    assert.equal(counts.get(401), 9, JSON.stringify([...counts]));
    assert.equal(counts.get(429), sent - 9);
    const lines = logLines(p.output()).filter((l) => String(l.msg).startsWith('admin login'));
    assert.ok(lines.length <= 12, `${lines.length} log lines for ${sent} attempts`);
    assert.equal(p.output().includes(WRONG), false);
  } finally {
    await p.stop();
    config.remove();
  }
});

test('admin login throttle: locks double up to max_lock_seconds, and a success clears the failures', () => {
  let now = 0;
  const logged: unknown[] = [];
  const logger = { warn: (...args: unknown[]) => logged.push(args) } as never;
  const throttle = new LoginThrottle(
    {
      enabled: true,
      max_failures: 3,
      window_seconds: 60,
      lock_seconds: 10,
      max_lock_seconds: 25,
      max_tracked: 100,
    },
    logger,
    () => now,
  );
  const fail = (n: number) => {
    let lock: number | undefined;
    for (let i = 0; i < n; i++) lock = throttle.failed('10.0.0.1', 'admin');
    return lock;
  };
  assert.equal(fail(3), 10);
  assert.equal(throttle.retryAfter('10.0.0.1'), 10);
  assert.equal(throttle.retryAfter('10.0.0.2'), undefined);
  now += 10_000;
  assert.equal(throttle.retryAfter('10.0.0.1'), undefined);
  assert.equal(fail(3), 20, 'the second lock doubles');
  now += 20_000;
  assert.equal(fail(3), 25, 'capped at max_lock_seconds');
  now += 25_000;
  fail(2);
  throttle.succeeded('10.0.0.1');
  assert.equal(fail(2), undefined, 'a success forgets earlier failures');
  // Two failures within the window plus one much later: the window restarted.
  now += 61_000;
  assert.equal(fail(1), undefined);
});

test('admin login throttle: IPv6 clients are keyed by their /64, IPv4-mapped ones by the IPv4 address', () => {
  assert.equal(clientKey('::ffff:10.1.2.3'), '10.1.2.3');
  assert.equal(clientKey('10.1.2.3'), '10.1.2.3');
  assert.equal(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
});

test('admin login throttle: memory is bounded by max_tracked', () => {
  const throttle = new LoginThrottle(
    {
      enabled: true,
      max_failures: 1,
      window_seconds: 60,
      lock_seconds: 60,
      max_lock_seconds: 60,
      max_tracked: 50,
    },
    { warn: () => undefined } as never,
  );
  for (let i = 0; i < 10_000; i++) throttle.failed(`10.0.${i >> 8}.${i & 255}`, `u${i}`);
  // The newest stay locked; the oldest were evicted (a bounded table cannot remember 10 000 addresses).
  assert.ok(throttle.retryAfter('10.0.39.15') !== undefined);
  assert.equal(throttle.retryAfter('10.0.0.0'), undefined);
});

test('admin login throttle: guessing one user from many addresses is logged once per window, and locks nobody', () => {
  const lines: { fields: Record<string, unknown>; msg: string }[] = [];
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }),
  } as never;
  const throttle = new LoginThrottle(
    {
      enabled: true,
      max_failures: 10,
      window_seconds: 60,
      lock_seconds: 60,
      max_lock_seconds: 3600,
      max_tracked: 1000,
    },
    logger,
    () => 0,
  );
  for (let i = 0; i < 50; i++) assert.equal(throttle.failed(`10.0.0.${i}`, 'admin'), undefined);
  const spread = lines.filter((l) => l.msg.includes('several addresses'));
  assert.equal(spread.length, 1);
  assert.equal(spread[0]?.fields.user, 'admin');
  assert.equal(spread[0]?.fields.clients, 11);
  assert.equal(throttle.retryAfter('10.0.0.49'), undefined);
});
