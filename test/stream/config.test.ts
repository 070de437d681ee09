import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';

function issues(yaml: string): { path: string; message: string }[] {
  try {
    parseSystemConfig(yaml, {});
  } catch (err) {
    assert.ok(err instanceof ConfigRejected, String(err));
    return err.issues;
  }
  assert.fail('expected the system config to be rejected');
}

test('stream config: defaults are tcp, 0.0.0.0, round_robin and no SNI routes', () => {
  const config = parseSystemConfig(
    'stream:\n  - { port: 5432, upstream: { targets: [{ host: db, port: 5432 }] } }\n',
    {},
  );
  assert.deepEqual(config.stream[0], {
    protocol: 'tcp',
    bind: '0.0.0.0',
    port: 5432,
    upstream: { targets: [{ host: 'db', port: 5432, weight: 1 }], load_balancing: 'round_robin' },
    sni_routes: [],
  });
});

test('stream config: rejections name the offending path', () => {
  const cases: [string, RegExp][] = [
    ['stream:\n  - { upstream: { targets: [{ host: a, port: 1 }] } }\n', /stream\[0\]/],
    ['stream:\n  - { port: 1, upstream: { targets: [] } }\n', /stream\[0\]\.upstream\.targets/],
    [
      'stream:\n  - { port: 1, protocol: sctp, upstream: { targets: [{ host: a, port: 1 }] } }\n',
      /stream\[0\]\.protocol/,
    ],
    [
      'stream:\n  - { port: 1, upstream: { targets: [{ host: a, port: 1 }], load_balancing: chash } }\n',
      /stream\[0\]\.upstream\.load_balancing/,
    ],
    [
      'stream:\n  - { port: 1, upstream: { targets: [{ host: a, port: 1 }] }, sni_routes: [{ server_name: x, upstream: {} }] }\n',
      /stream\[0\]\.sni_routes\[0\]\.upstream/,
    ],
    [
      'stream:\n  - { port: 1, upstream: { targets: [{ host: a, port: 1, weight: 0 }] } }\n',
      /every target has weight 0/,
    ],
  ];
  for (const [yaml, expected] of cases) {
    const found = issues(yaml);
    assert.ok(
      found.some((i) => expected.test(`${i.path} ${i.message}`)),
      `${yaml}: ${JSON.stringify(found)}`,
    );
  }
});

test('stream config: two listeners on one protocol, address and port are rejected; tcp and udp may share a port', () => {
  const pool = 'upstream: { targets: [{ host: a, port: 53 }] }';
  const found = issues(`stream:\n  - { port: 53, ${pool} }\n  - { port: 53, ${pool} }\n`);
  assert.equal(found[0]?.path, 'stream[1].port');
  assert.match(found[0]?.message ?? '', /stream\[0\] already listens on tcp 0\.0\.0\.0:53/);
  const ok = parseSystemConfig(
    `stream:\n  - { port: 53, ${pool} }\n  - { port: 53, protocol: udp, ${pool} }\n`,
    {},
  );
  assert.equal(ok.stream.length, 2);
});

test('stream config: an SNI name routed twice is rejected, whatever its case', () => {
  const pool = '{ targets: [{ host: a, port: 443 }] }';
  const found = issues(
    `stream:\n  - port: 443\n    upstream: ${pool}\n    sni_routes:\n      - { server_name: API.example.com, upstream: ${pool} }\n      - { server_name: api.example.com, upstream: ${pool} }\n`,
  );
  assert.equal(found[0]?.path, 'stream[0].sni_routes[1].server_name');
});
