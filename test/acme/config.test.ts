import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { startAcmeGateway } from './harness.js';

const ACME = `
tls:
  acme: { domains: [gw.test] }
acme:
  directory_url: https://acme.test/dir
  terms_of_service_agreed: true
`;

function issuesOf(yaml: string): { path: string; message: string }[] {
  try {
    parseSystemConfig(yaml, {});
  } catch (err) {
    if (err instanceof ConfigRejected) return err.issues;
    throw err;
  }
  return [];
}

describe('acme: configuration', () => {
  test('a valid acme block and slot are accepted', () => {
    assert.deepEqual(issuesOf(ACME), []);
  });

  test('wildcards with dns-01, RSA keys, http-01 and an admin.tls slot are accepted', () => {
    const yaml = `${ACME.replace('[gw.test]', '[gw.test, "*.gw.test"]')}  key_type: rsa-4096
  challenge: dns-01
  dns_hook: { type: exec, command: [/usr/local/bin/dns-hook] }
admin:
  port: 0
  username: a
  password: b
  tls: { acme: { domains: [admin.gw.test], challenge: http-01 } }
`;
    assert.deepEqual(issuesOf(yaml), []);
    const system = parseSystemConfig(yaml, {});
    const acme = system.acme as Record<string, unknown>;
    assert.deepEqual(acme.dns_hook, {
      type: 'exec',
      command: ['/usr/local/bin/dns-hook'],
      timeout_seconds: 30,
      propagation_seconds: 0,
    });
  });

  test('the challenge defaults to tls-alpn-01', () => {
    assert.equal((parseSystemConfig(ACME, {}).acme as Record<string, unknown>).challenge, 'tls-alpn-01');
  });

  const rejected: [string, string, string][] = [
    [
      'a plain-http directory_url',
      ACME.replace('https://acme.test/dir', 'http://acme.test/dir'),
      'acme.directory_url',
    ],
    [
      'terms of service not agreed',
      ACME.replace('terms_of_service_agreed: true', 'terms_of_service_agreed: false'),
      'acme.terms_of_service_agreed',
    ],
    ['a wildcard domain', ACME.replace('[gw.test]', '["*.gw.test"]'), 'tls.acme.domains[0]'],
    ['an IP address domain', ACME.replace('[gw.test]', '[10.0.0.1]'), 'tls.acme.domains[0]'],
    ['a malformed renew_before', `${ACME}  renew_before: soon\n`, 'acme.renew_before'],
    ['an unknown key type', `${ACME}  key_type: rsa-1024\n`, 'acme.key_type'],
    [
      'a wildcard with the default tls-alpn-01 challenge',
      ACME.replace('[gw.test]', '["*.gw.test"]'),
      'tls.acme.domains[0]',
    ],
    ['dns-01 without a dns_hook', `${ACME}  challenge: dns-01\n`, 'acme.challenge'],
    [
      'a slot asking for dns-01 without a dns_hook',
      ACME.replace('{ domains: [gw.test] }', '{ domains: [gw.test], challenge: dns-01 }'),
      'tls.acme.challenge',
    ],
    ['an unknown challenge', `${ACME}  challenge: dns-02\n`, 'acme.challenge'],
    [
      'a webhook that is not https',
      `${ACME}  challenge: dns-01\n  dns_hook: { type: webhook, url: "http://dns.test/hook" }\n`,
      'acme.dns_hook.url',
    ],
    [
      'an exec hook without a command',
      `${ACME}  challenge: dns-01\n  dns_hook: { type: exec }\n`,
      'acme.dns_hook.command',
    ],
    [
      'an exec hook with a zero timeout',
      `${ACME}  challenge: dns-01\n  dns_hook: { type: exec, command: [x], timeout_seconds: 0 }\n`,
      'acme.dns_hook.timeout_seconds',
    ],
    [
      'one domain set asked with two challenges',
      ACME.replace(
        '  acme: { domains: [gw.test] }',
        '  acme: { domains: [gw.test] }\n  sni_certs: [{ server_name: gw.test, acme: { challenge: http-01 } }]',
      ),
      'tls.sni_certs[0].acme.challenge',
    ],
    [
      'an admin.tls acme slot without domains',
      `${ACME}admin: { port: 0, username: a, password: b, tls: { acme: {} } }\n`,
      'admin.tls.acme.domains',
    ],
    [
      'store storage without encryption_key',
      `${ACME}  storage: { type: store, store: r }\n`,
      'acme.storage.encryption_key',
    ],
    ['an acme slot without the acme block', 'tls:\n  acme: { domains: [gw.test] }\n', 'tls'],
  ];
  for (const [what, yaml, path] of rejected) {
    test(`rejected with its key path: ${what}`, () => {
      const issues = issuesOf(yaml);
      assert.ok(
        issues.some((i) => i.path === path),
        `expected an issue at ${path}, got ${JSON.stringify(issues)}`,
      );
    });
  }

  test('store storage naming a store gateway.yaml lacks is rejected at startup with its key path', () => {
    const system = parseSystemConfig(
      `${ACME}  storage: { type: store, store: nope, encryption_key: k }\n`,
      {},
    );
    assert.throws(
      () => Gateway.create({ system, logger: silentLogger }, parseGatewayConfig('routes: []')),
      (err: unknown) =>
        err instanceof ConfigRejected && err.issues.some((i) => i.path === 'acme.storage.store'),
    );
  });

  test('the example configuration passes `switchyard validate`', () => {
    const run = spawnSync(
      process.execPath,
      [
        'bin/switchyard.js',
        'validate',
        '--system-config',
        'examples/acme/config/system.yaml',
        '--gateway-config',
        'examples/acme/config/gateway.yaml',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 0, run.stderr);
  });
});

describe('acme: off', () => {
  test('E2E-ACME-01: certs list says disabled, renew answers 501, both need credentials', async () => {
    const gw = await startAcmeGateway(0, '');
    try {
      assert.deepEqual(await gw.call('GET', '/api/acme/certs'), {
        status: 200,
        body: { enabled: false, certs: [] },
      });
      assert.equal((await gw.call('POST', '/api/acme/certs/gw.test/renew')).status, 501);
      assert.equal((await fetch(`${gw.admin.url}/api/acme/certs`)).status, 401);
      assert.equal((await fetch(`${gw.admin.url}/api/acme/certs/x/renew`, { method: 'POST' })).status, 401);
      assert.equal((await fetch(`${gw.admin.url}/readyz`)).status, 200);
    } finally {
      await gw.stop();
    }
  });
});
