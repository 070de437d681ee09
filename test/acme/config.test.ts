import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { parseSystemConfig } from '../../src/config/system.js';
import { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/observability/logger.js';
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
    ['an RSA key type', `${ACME}  key_type: rsa-2048\n`, 'acme.key_type'],
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
