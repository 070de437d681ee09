import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser as Chromium, Page } from 'playwright-core';
import { startAdminServer } from '../../src/admin/server.js';
import { silentLogger } from '../../src/core/logger.js';
import { DOMAIN, handshake, HELLO_YAML, PASSWORD, USER } from '../acme/harness.js';
import { Browser } from '../support/browser.js';
import { startCasServer, type CasServer } from '../support/cas-server.js';
import { chromiumSkipReason } from '../support/chromium.js';
import { startGateway } from '../support/in-process.js';
import { skipWithoutPebble, startPebble, type PebbleServer } from '../support/pebble.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { adminJson, buildUiAndLaunch, expectCount, UI_DIR, withEditor } from './harness.js';

// The Sessions and Certificates pages (docs/editor.md) with real state behind them: sessions a
// CAS login stored in a real Redis, and a certificate a real Pebble issued.

const casYaml = `
stores:
  - { name: main, type: redis, url: '\${REDIS_URL}' }
routes:
  - { name: app, match: { path: /app/* }, policy: sso }
policies:
  - name: sso
    nodes:
      - { id: in, type: listener }
      - id: cas
        type: cas-auth
        config:
          idp_uri: \${CAS_URL}
          session:
            secret: \${SESSION_SECRET}
            storage: kvstore
            store: main
      - { id: show, type: echo, config: { body: 'hello {{message.user}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: cas.in }
      - { from: cas.success, to: show.in }
      - { from: cas.denied, to: out.in }
      - { from: cas.redirect, to: out.in }
      - { from: show.success, to: out.in }
`;

interface Listed {
  sessions: { id: string; subject: string }[];
}

/** Collects page errors and console errors (not failed loads the test provokes itself). */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
  });
  return errors;
}

describe('editor: sessions of a real login', { skip: chromiumSkipReason() || skipWithoutRedis() }, () => {
  let chromium: Chromium;
  let redis: RedisServer;
  let cas: CasServer;
  before(async () => {
    redis = await startRedis();
    cas = await startCasServer();
    chromium = await buildUiAndLaunch();
  });
  after(async () => {
    await chromium?.close();
    await cas?.close();
    await redis?.stop();
  });

  test('sessions: a CAS login is listed with its id masked; Revoke ends it in the UI, the Admin API and on the data plane', () =>
    withEditor(
      chromium,
      '#/sessions',
      {
        gatewayYaml: casYaml,
        env: { REDIS_URL: redis.url, CAS_URL: cas.url, SESSION_SECRET: 'ui session secret' },
      },
      async (page, h) => {
        // Two people log in through CAS as a browser would: the ticket comes back to the service URL.
        const login = async (user: string) => {
          const browser = new Browser();
          const service = `${h.data}/app/home`;
          const res = await browser.get(`${service}?ticket=${cas.issueTicket(user, service)}`);
          assert.equal(res.status, 302);
          const id = browser.cookie('127.0.0.1', 'cas_session') ?? '';
          assert.match(id, /^[0-9a-f]{32}$/);
          assert.equal((await browser.get(`${h.data}/app/x`)).body, `hello ${user}`);
          return { browser, id };
        };
        const alice = await login('alice');
        const bob = await login('bob');

        await page.getByRole('button', { name: 'List sessions' }).click();
        const table = page.getByRole('table', { name: 'Sessions' });
        await table.waitFor();
        const aliceRow = table.locator('tbody tr', { hasText: 'alice' });
        await aliceRow.waitFor();
        assert.equal(await table.locator('tbody tr').count(), 2);
        const shown = await aliceRow.innerText();
        assert.match(shown, /cas-auth/);
        assert.match(shown, /sso \/ app/);
        assert.ok(shown.includes(`${alice.id.slice(0, 8)}…`), shown);
        // The id is the cookie value, a bearer secret: never whole anywhere in the page.
        const html = await page.content();
        assert.ok(!html.includes(alice.id), 'alice’s session id is masked');
        assert.ok(!html.includes(bob.id), 'bob’s session id is masked');

        // A subject filter narrows the list.
        await page.getByLabel('Subject').fill('bob');
        await page.getByRole('button', { name: 'List sessions' }).click();
        await expectCount('listed session (only bob)', () => table.locator('tbody tr').count(), 1);
        assert.match(await table.locator('tbody tr').innerText(), /bob/);
        await page.getByLabel('Subject').fill('');
        await page.getByRole('button', { name: 'List sessions' }).click();
        await expectCount('listed sessions (both)', () => table.locator('tbody tr').count(), 2);

        let asked = '';
        page.once('dialog', (dialog) => {
          asked = dialog.message();
          void dialog.accept();
        });
        await page
          .getByRole('button', { name: `Revoke session ${alice.id.slice(0, 8)}… of alice`, exact: true })
          .click();
        await page.getByText(`Session ${alice.id.slice(0, 8)}… revoked.`).waitFor();
        assert.match(asked, /stops working on the next request/);
        assert.ok(!asked.includes(alice.id), 'the confirmation does not show the whole id');
        await expectCount('listed session (alice gone)', () => table.locator('tbody tr').count(), 1);
        assert.match(await table.locator('tbody tr').innerText(), /bob/);

        // Gone from the store as the Admin API sees it; bob's session untouched.
        const listed = await adminJson<Listed>(h, '/api/sessions?store=main');
        assert.deepEqual(
          listed.sessions.map((s) => s.id),
          [bob.id],
        );
        // Alice's cookie no longer authenticates: back to the CAS login. Bob still gets in.
        const denied = await alice.browser.get(`${h.data}/app/x`);
        assert.equal(denied.status, 302);
        assert.match(String(denied.headers.location), /\/cas\/login\?service=/);
        assert.equal((await bob.browser.get(`${h.data}/app/x`)).body, 'hello bob');
      },
    ));
});

describe(
  'editor: certificates issued by a real ACME CA',
  { skip: chromiumSkipReason() || skipWithoutPebble() },
  () => {
    let chromium: Chromium;
    let pebble: PebbleServer;
    let root = '';
    const state = tempDir('switchyard-ui-acme-');
    before(async () => {
      pebble = await startPebble();
      root = await pebble.rootPem();
      chromium = await buildUiAndLaunch();
    });
    after(async () => {
      await chromium?.close();
      await pebble?.stop();
      state.remove();
    });

    test('certificates: the page follows a Pebble issuance to its domains, expiry and serial; Force renew re-issues and the new certificate shows', async () => {
      // The data plane listens on the port Pebble validates TLS-ALPN-01 against (docs/acme.md).
      const running = await startGateway(HELLO_YAML, {
        systemYaml: [
          `listener: { bind: 127.0.0.1, port: ${pebble.tlsPort} }`,
          'timeouts: { shutdown_timeout_seconds: 2 }',
          `admin: { bind: 127.0.0.1, port: 0, username: ${USER}, password: "${PASSWORD}" }`,
          `tls:\n  acme: { domains: [${DOMAIN}] }`,
          'acme:',
          `  directory_url: ${pebble.directoryUrl}`,
          `  directory_ca_path: ${pebble.directoryCaPath}`,
          '  terms_of_service_agreed: true',
          `  storage: { type: filesystem, dir: ${state.path} }`,
        ].join('\n'),
      });
      const adminConfig = running.gateway.system.admin;
      assert.ok(adminConfig);
      const admin = await startAdminServer(running.gateway, adminConfig, silentLogger, {
        print: () => undefined,
        uiDir: UI_DIR,
      });
      const context = await chromium.newContext({
        httpCredentials: { username: USER, password: PASSWORD },
        viewport: { width: 1400, height: 900 },
      });
      try {
        const page = await context.newPage();
        const errors = watchErrors(page);
        await page.goto(`${admin.url}/#/certificates`);
        await page.getByText('ACME on · storage filesystem').waitFor();
        const row = page.locator(`tr[data-cert="${DOMAIN}"]`);
        const field = (name: string) => row.locator(`td[data-field="${name}"]`).innerText();
        // Placeholder first, then the page refreshes itself until the order completes.
        await waitFor(async () => (await row.count()) === 1 && (await field('state')) === 'issued', {
          timeoutMs: 90_000,
          intervalMs: 200,
          what: 'the page to show the certificate issued',
        });
        const issued = await handshake(running.port, { ca: root });
        assert.equal(issued.authorized, true, issued.authorizationError);
        assert.match(await row.innerText(), new RegExp(DOMAIN.replace('.', '\\.')));
        assert.equal(await field('serial'), issued.cert.serialNumber.toLowerCase());
        assert.equal(
          new Date(await field('not_after')).getTime(),
          new Date(issued.cert.valid_to).getTime(),
          'the expiry shown is the served certificate’s',
        );

        // Not due yet: a plain Renew says so and orders nothing.
        await page.getByRole('button', { name: `Renew ${DOMAIN}`, exact: true }).click();
        await page.getByText('Not renewed: not due before').waitFor();
        assert.equal(await field('serial'), issued.cert.serialNumber.toLowerCase());

        await page.getByRole('button', { name: `Force renew ${DOMAIN}`, exact: true }).click();
        await page.getByText(`Renewal of ${DOMAIN} scheduled.`).waitFor();
        const oldSerial = issued.cert.serialNumber.toLowerCase();
        await waitFor(
          async () => (await field('state')) === 'issued' && (await field('serial')) !== oldSerial,
          { timeoutMs: 90_000, intervalMs: 200, what: 'the renewed certificate on the page' },
        );
        const renewed = await handshake(running.port, { ca: root });
        assert.equal(renewed.authorized, true, renewed.authorizationError);
        assert.notEqual(renewed.cert.serialNumber.toLowerCase(), oldSerial, 'a new certificate is served');
        assert.equal(await field('serial'), renewed.cert.serialNumber.toLowerCase());
        assert.equal(await row.locator('td.muted').innerText(), '', 'no last error');
        assert.deepEqual(errors, [], 'no console errors');
      } finally {
        await context.close();
        await Promise.all([admin.close(), running.stop()]);
      }
    });
  },
);
