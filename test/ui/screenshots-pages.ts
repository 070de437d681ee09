// Regenerates the screenshots of the console's pages and forms in docs/editor/ (sandbox, certificate
// files, condition builder, route form, dark theme, 1024 px) from the real editor on a throwaway
// gateway: SWITCHYARD_FROM_SOURCE=1 node --import tsx test/ui/screenshots-pages.ts
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { mockPolicyYaml } from '../admin/harness.js';
import { createAuthority } from '../support/certs.js';
import { tempDir } from '../support/temp-dir.js';
import { buildUiAndLaunch, withEditor } from './harness.js';

const OUT = join(import.meta.dirname, '..', '..', 'docs', 'editor');

const GATEWAY_YAML = `routes:
  - name: hello
    match: { path: /hello }
    policy: hello-policy
  - name: orders
    match: { path: /orders/*, methods: [GET, POST] }
    policy: orders-policy
    description: the order service
consumers:
  - name: alice
    group: gold
    credentials: { key-auth: { key: alices-key }, hmac-auth: { access_key: alice-ak, secret_key: s3cret } }
policies:${mockPolicyYaml('hello-policy', 'hello')}
  - name: orders-policy
    nodes:
      - { id: listener, type: listener }
      - id: tenant
        type: condition
        config:
          conditions:
            - [http_x_tenant, "==", acme]
            - [OR, [arg_debug, absent], [remote_addr, ipmatch, [10.0.0.0/8]]]
      - id: backend
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: 1 }] }
      - { id: refuse, type: mocking, config: { response_status: 403, response_example: unknown tenant } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: tenant.in }
      - { from: tenant.true, to: backend.in }
      - { from: tenant.false, to: refuse.in }
      - { from: backend.success, to: client.in }
      - { from: refuse.success, to: client.in }
`;

mkdirSync(OUT, { recursive: true });
const dir = tempDir();
const ca = createAuthority(dir.path);
const shop = ca.issue('shop', { dns: ['shop.example', 'www.shop.example'] });
const api = ca.issue('api', { cn: 'api.example' });
const browser = await buildUiAndLaunch();
try {
  const opts = {
    gatewayYaml: GATEWAY_YAML,
    system: `debug: { enabled: true, trace_all: true, sandbox: true }
tls:
  cert_path: "${shop.cert}"
  key_path: "${shop.key}"
  sni_certs:
    - { server_name: api.example, cert_path: "${api.cert}", key_path: "${api.key}" }`,
  };
  await withEditor(browser, '#/routes', opts, async (page, h) => {
    page.on('dialog', (d) => void d.accept()); // leaving the half-filled route form
    const go = async (hash: string, ready: () => Promise<unknown>) => {
      await page.goto(`${h.url}/${hash}`);
      await ready();
    };
    const shot = (file: string) => page.screenshot({ path: join(OUT, file), fullPage: true });

    await go('#/routes', () => page.locator('tr[data-route="orders"]').waitFor());
    await page.getByRole('button', { name: 'New route' }).click();
    await page.getByRole('form', { name: 'Route' }).getByLabel('Name', { exact: true }).fill('checkout');
    await shot('route-form.png');

    await go('#/policies/orders-policy', () => page.locator('[data-node-id="tenant"] .pnode-head').click());
    await page.getByRole('group', { name: 'conditions builder' }).scrollIntoViewIfNeeded();
    await shot('condition-builder.png');

    await go('#/certificates', () => page.locator('tr[data-cert-file="tls.cert_path"]').waitFor());
    await shot('certificates.png');

    await go('#/traces', () => page.getByRole('region', { name: 'Sandbox' }).waitFor());
    const sandbox = page.getByRole('region', { name: 'Sandbox' });
    await sandbox.getByLabel('Policy').selectOption('orders-policy');
    await sandbox.locator('[data-mock="backend"]').waitFor();
    await sandbox.getByLabel('Method').selectOption('POST');
    await sandbox.getByLabel('Path').fill('/orders/7');
    await sandbox.getByLabel('Header 1 name').fill('x-tenant');
    await sandbox.getByLabel('Header 1 value').fill('acme');
    await sandbox.getByLabel('Body', { exact: true }).fill('{"item": 7}');
    await sandbox.getByLabel('Mock status of backend').fill('201');
    await sandbox.getByLabel('Mock body of backend').fill('created');
    await sandbox.getByRole('button', { name: 'Run' }).click();
    await sandbox.getByRole('region', { name: 'Save as test' }).waitFor();
    await sandbox.screenshot({ path: join(OUT, 'sandbox.png') });

    await go('#/consumers', () => page.locator('tr[data-consumer="alice"]').waitFor());
    await page.locator('tr[data-consumer="alice"]').getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('form', { name: 'Consumer' }).waitFor();
    await shot('consumer-form.png');

    await go('#/routes', () => page.locator('tr[data-route="orders"]').waitFor());
    await page.getByRole('button', { name: 'Dark theme' }).click();
    await shot('dark-routes.png');
    await go('#/no-such-page', () => page.getByRole('heading', { name: 'Page not found' }).waitFor());
    await shot('not-found.png');
    await page.getByRole('button', { name: 'Dark theme' }).click();
  });
  await withEditor(browser, '#/policies/orders-policy', { ...opts, width: 1024 }, async (page) => {
    await page.locator('[data-node-id="backend"] .pnode-head').click();
    await page.locator('fieldset[data-field="config.targets"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUT, '1024-node-form.png') });
  });
} finally {
  await browser.close();
  dir.remove();
}
console.log(`screenshots written to ${OUT}`);
